package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// Discord's limits on one webhook message.
const (
	discordMaxEmbeds      = 10
	discordMaxEmbedChars  = 6000 // all titles and descriptions together
	discordMaxDescription = 4096
	discordMaxTitle       = 256
	discordMaxContent     = 2000
)

// Embed colours: the severity at a glance, green once resolved.
const (
	colorCritical = 0xE01E5A
	colorWarning  = 0xF2A33A
	colorInfo     = 0x2F80ED
	colorResolved = 0x2EB67D
)

type discordMessage struct {
	Content         string          `json:"content"`
	Embeds          []discordEmbed  `json:"embeds"`
	AllowedMentions discordMentions `json:"allowed_mentions"`
}

type discordEmbed struct {
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Color       int            `json:"color"`
	Fields      []discordField `json:"fields"`
	Timestamp   time.Time      `json:"timestamp"`
	Image       *discordImage  `json:"image,omitempty"`
}

// discordImage shows a file sent with the message: "attachment://NAME".
type discordImage struct {
	URL string `json:"url"`
}

// discordMaxImages is how many charts a message carries; Discord takes
// ten files of at most 8 MiB together, and a chart is about 100 KiB.
const discordMaxImages = 4

type discordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline"`
}

// discordMentions is allowed_mentions; empty parse means a command line
// that says "@everyone" pings nobody.
type discordMentions struct {
	Parse []string `json:"parse"`
}

// discordStyle escapes Discord markdown in text from the GPU.
func discordStyle() style {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`, "<", `\<`, ">", `\>`)
	return style{br: "\n", escape: r.Replace}
}

// encodeDiscord posts one embed per alert (as many as Discord takes),
// coloured by severity, with the headline as the message's content.
func encodeDiscord(m *notifier.Notification) ([]byte, error) {
	msg := discordMessage{Content: headline(m), AllowedMentions: discordMentions{Parse: []string{}}}
	chars, st := 0, discordStyle()
	for i := range m.Alerts {
		a := &m.Alerts[i]
		e := discordEmbed{
			Title:       truncate(alertTitle(a), discordMaxTitle),
			Description: truncate(alertText(a, st), discordMaxDescription),
			Color:       alertColor(a),
			Fields:      []discordField{{Name: "Host", Value: a.Host, Inline: true}},
			Timestamp:   a.At.UTC(),
		}
		if a.OnGPU() {
			e.Fields = append(e.Fields, discordField{Name: "GPU", Value: a.Subject(), Inline: true})
		}
		e.Fields = append(e.Fields, discordField{Name: "Severity", Value: a.Severity, Inline: true})
		size := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description) + 30
		if len(msg.Embeds) == discordMaxEmbeds || chars+size > discordMaxEmbedChars {
			msg.Content += fmt.Sprintf(" (%d more alerts not shown)", len(m.Alerts)-i)
			break
		}
		chars += size
		msg.Embeds = append(msg.Embeds, e)
	}
	msg.Content = truncate(msg.Content, discordMaxContent)
	return json.Marshal(msg)
}

func alertColor(a *notifier.Alert) int {
	if a.Status == notifier.StatusResolved {
		return colorResolved
	}
	switch a.Severity {
	case "critical":
		return colorCritical
	case "warning":
		return colorWarning
	}
	return colorInfo
}

// discordImages turns an encoded message into the multipart form Discord
// takes files in (payload_json and files[N]), each alert's chart shown in
// its embed. ok is false when no chart could be drawn: the JSON goes as
// it was.
func (n *Notifier) discordImages(m *notifier.Notification, body []byte) (out []byte, ctype string, ok bool) {
	var msg discordMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, "", false
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	files := 0
	for i := range msg.Embeds {
		if i >= len(m.Alerts) || m.Alerts[i].Chart == "" || files == discordMaxImages {
			continue
		}
		png, err := n.charts.ChartPNG(m.Alerts[i].Chart)
		if err != nil {
			continue // a picture that cannot be drawn leaves the text as it is
		}
		name := fmt.Sprintf("chart-%d.png", files)
		part, err := w.CreateFormFile(fmt.Sprintf("files[%d]", files), name)
		if err != nil {
			return nil, "", false
		}
		part.Write(png)
		msg.Embeds[i].Image = &discordImage{URL: "attachment://" + name}
		files++
	}
	if files == 0 {
		return nil, "", false
	}
	payload, err := json.Marshal(msg)
	if err != nil || w.WriteField("payload_json", string(payload)) != nil || w.Close() != nil {
		return nil, "", false
	}
	return buf.Bytes(), w.FormDataContentType(), true
}
