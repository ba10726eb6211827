package webhook

import (
	"encoding/json"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// Teams takes an Adaptive Card in a message: what Teams' Workflows
// ("Post to a channel when a webhook request is received") accept; the old
// Office 365 connectors and their MessageCards are retired.

// teamsMaxText bounds the card's text; Teams refuses messages over 28 KB.
const teamsMaxText = 20000

type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"`
	Content     teamsCard `json:"content"`
}

type teamsCard struct {
	Schema  string            `json:"$schema"`
	Type    string            `json:"type"`
	Version string            `json:"version"`
	MSTeams map[string]string `json:"msteams"`
	Body    []teamsBlock      `json:"body"`
	Actions []teamsAction     `json:"actions,omitempty"`
}

// teamsAction is a button that opens a link: a chart on gpuwatch's API.
// Teams' webhooks take no uploaded picture, and an image the card points
// at must be public; the API is not.
type teamsAction struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

// teamsMaxActions is how many chart buttons a card carries.
const teamsMaxActions = 5

// teamsBlock is an Adaptive Card TextBlock.
type teamsBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Wrap      bool   `json:"wrap"`
	Size      string `json:"size,omitempty"`
	Weight    string `json:"weight,omitempty"`
	Color     string `json:"color,omitempty"`
	Separator bool   `json:"separator,omitempty"`
}

// teamsStyle: Adaptive Card markdown needs a blank line to break a line.
func teamsStyle() style { return style{br: "\n\n"} }

// encodeTeams posts a card with the headline in the alert's colour and a
// block of text per alert.
func encodeTeams(m *notifier.Notification, link func(*notifier.Alert) string) ([]byte, error) {
	color := map[int]string{colorCritical: "Attention", colorWarning: "Warning", colorInfo: "Accent", colorResolved: "Good"}[alertColor(&m.Alerts[0])]
	card := teamsCard{
		Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4",
		MSTeams: map[string]string{"width": "Full"},
		Body: []teamsBlock{{Type: "TextBlock", Text: headline(m), Wrap: true, Size: "Large", Weight: "Bolder", Color: color},
			{Type: "TextBlock", Text: truncate(notificationText(m, teamsStyle()), teamsMaxText), Wrap: true, Separator: true}},
	}
	for i := range m.Alerts {
		if u := link(&m.Alerts[i]); u != "" && len(card.Actions) < teamsMaxActions {
			card.Actions = append(card.Actions, teamsAction{Type: "Action.OpenUrl", Title: "Chart of " + alertTitle(&m.Alerts[i]), URL: u})
		}
	}
	return json.Marshal(teamsMessage{Type: "message", Attachments: []teamsAttachment{
		{ContentType: "application/vnd.microsoft.card.adaptive", Content: card}}})
}
