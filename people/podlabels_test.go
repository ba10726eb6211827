package people_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/people"
)

func TestOwnersByPodLabel(t *testing.T) {
	cfg := section()
	cfg.PodLabels = map[string]map[string]string{
		"owner":                   {"alice": "U0ALICE", "dave": "dave@example.org"},
		"example.org/cost-center": {"cv-42": "pi@example.org"},
	}
	cfg.PodLabelEmail = "{owner}@example.org"
	dir := workspace()
	p := people.New(cfg, people.Options{Directory: dir, Now: func() time.Time { return t0 }})
	procs := []gpu.Process{
		// A pod in a namespace the section maps: its owner label wins.
		{PID: 1, User: "root", Container: "k8s:vision/train-0", PodLabels: "owner=alice", MemUsed: 40 << 30},
		// An owner the values do not list: the email pattern.
		{PID: 2, User: "root", Container: "k8s:ml/notebook-bob-0", PodLabels: "owner=bob", MemUsed: 30 << 30},
		// Two mapped labels: the first key, in order, wins.
		{PID: 3, User: "1000", Container: "k8s:ml/eval-0", PodLabels: "example.org/cost-center=cv-42,owner=dave", MemUsed: 20 << 30},
		// An owner no one in Slack is, in a mapped namespace: the namespace.
		{PID: 4, User: "root", Container: "k8s:vision/jupyter-0", PodLabels: "owner=carol", MemUsed: 10 << 30},
		// A label the section does not map, no mapped namespace, a root
		// user: no one.
		{PID: 5, User: "root", Container: "k8s:ml/batch-0", PodLabels: "team=nlp", MemUsed: 5 << 30},
	}
	owners, unmapped, err := p.Owners(context.Background(), procs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range owners {
		got = append(got, o.Person.ID+" "+strings.Join(o.Holds, "+")+" via "+string(o.Via))
	}
	want := []string{
		"U0ALICE vision/train-0 via people.pod_labels.owner.alice",
		"U0BOB ml/notebook-bob-0 via people.pod_label_email",
		"U0PI ml/eval-0 via people.pod_labels.example.org/cost-center.cv-42",
		"U0DAVE vision/jupyter-0 via people.namespaces.vision",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("owners:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(unmapped) != 1 || unmapped[0] != "ml/batch-0" {
		t.Errorf("unmapped %q, want ml/batch-0", unmapped)
	}
	if calls := strings.Join(dir.calls(), " "); !strings.Contains(calls, "email:carol@example.org") {
		t.Errorf("carol's email was not looked up: %s", calls)
	}
}

func TestIdentitiesOfAPod(t *testing.T) {
	proc := gpu.Process{PID: 1, User: "alice", Container: "k8s:vision/train-0", PodLabels: "owner=bob,team=cv"}
	var got []string
	for _, id := range people.IdentitiesOf(&proc) {
		got = append(got, id.String())
		if back, err := people.ParseIdentity(id.String()); err != nil || back != id {
			t.Errorf("%s reads back as %+v, %v", id, back, err)
		}
	}
	if want := "pod_label:owner=bob pod_label:team=cv namespace:vision user:alice"; strings.Join(got, " ") != want {
		t.Errorf("IdentitiesOf = %s, want %s", strings.Join(got, " "), want)
	}
	for _, bad := range []string{"pod_label:owner", "pod_label:=alice", "pod_label:owner=", "pod_label:Own er=alice", "pod_label:owner=a b"} {
		if _, err := people.ParseIdentity(bad); err == nil || !strings.Contains(err.Error(), "pod_label:KEY=VALUE") {
			t.Errorf("ParseIdentity(%q): %v, want an error that shows pod_label:KEY=VALUE", bad, err)
		}
	}
}

func TestPodLabelKeys(t *testing.T) {
	cfg := people.Config{PodLabels: map[string]map[string]string{"team": {"cv": "U0X"}, "owner": {"a": "U0A"}}, PodLabelEmail: "{user}@example.org"}
	if got := strings.Join(cfg.PodLabelKeys(), " "); got != "owner team user" {
		t.Errorf("PodLabelKeys = %q, want owner team user", got)
	}
	cfg.PodLabelEmail = "{owner}@example.org"
	if got := strings.Join(cfg.PodLabelKeys(), " "); got != "owner team" {
		t.Errorf("PodLabelKeys with the pattern's key mapped too = %q, want owner team", got)
	}
	if !(&people.Config{PodLabelEmail: "{owner}@example.org"}).Mapped() {
		t.Errorf("a section with pod_label_email alone maps no one")
	}
}

func TestCheckPodLabels(t *testing.T) {
	cfg := people.Config{
		PodLabels: map[string]map[string]string{
			"owner":        {"alice": "U0ALICE", "bob": "bob.at.example.org", "not a value": "U0X"},
			"Bad Key":      {"x": "U0X"},
			"example.org/": {"x": "U0X"},
		},
		PodLabelEmail: "{owner}@{domain}",
		Groups:        []people.Group{{Name: "cv", Leads: []string{"U0PI"}, Members: []string{"pod_label:team=cv"}}},
	}
	problems := cfg.Check(func(string) (bool, bool) { return true, true }, func(string) error { return nil })
	var got []string
	for _, p := range problems {
		got = append(got, strings.Join(p.Path, ".")+": "+p.Msg)
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		`pod_labels.Bad Key: people.pod_labels: "Bad Key" is not a Kubernetes label key`,
		`pod_labels.example.org/: people.pod_labels: "example.org/" is not a Kubernetes label key`,
		"pod_labels.owner.bob: people.pod_labels.owner.bob is neither a Slack user ID",
		`pod_labels.owner.not a value: people.pod_labels.owner: "not a value" is not a label value`,
		"pod_label_email: people.pod_label_email must hold one pod label key in braces",
		"groups.0.members.0: people.groups[0].members[0]: a team's digest counts usage by Unix user and namespace",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "bob.at.example.org") {
		t.Errorf("a problem quotes a mapping's value:\n%s", text)
	}
	for pattern, want := range map[string]string{
		"{owner}@example.org":         "",
		"{example.org/owner}@x.org":   "",
		"{Own er}@example.org":        `names "Own er", which is not a Kubernetes label key`,
		"owner@example.org":           "must hold one pod label key in braces",
		"{owner}":                     "does not make an email",
		"{owner}@{owner}.example.org": "must hold one pod label key in braces",
	} {
		cfg := people.Config{PodLabelEmail: pattern}
		var msg string
		for _, p := range cfg.Check(func(string) (bool, bool) { return true, true }, func(string) error { return nil }) {
			msg += p.Msg
		}
		if (want == "") != (msg == "") || !strings.Contains(msg, want) {
			t.Errorf("pod_label_email %q: problems %q, want %q", pattern, msg, want)
		}
	}
	many := people.Config{PodLabels: map[string]map[string]string{}}
	for _, k := range strings.Fields("a b c d e f g h i") {
		many.PodLabels[k] = map[string]string{"x": "U0X"}
	}
	if ps := many.Check(func(string) (bool, bool) { return true, true }, func(string) error { return nil }); len(ps) != 1 ||
		!strings.Contains(ps[0].Msg, "9 label keys, more than the 8") {
		t.Errorf("nine label keys: problems %+v, want one that says 9 is more than 8", ps)
	}
}

func TestMappingsListPodLabels(t *testing.T) {
	cfg := people.Config{PodLabels: map[string]map[string]string{"owner": {"alice": "U0ALICE", "dave": "dave@example.org"}}}
	var got []string
	for _, m := range cfg.Mappings() {
		got = append(got, m.Path+" "+m.Target.Kind())
	}
	if want := "people.pod_labels.owner.alice the user ID U0ALICE,people.pod_labels.owner.dave an email"; strings.Join(got, ",") != want {
		t.Errorf("Mappings = %q, want %q", strings.Join(got, ","), want)
	}
}

func TestResolveByPodLabelSlackDown(t *testing.T) {
	dir := workspace()
	dir.fail = errors.New("slack is down")
	p := people.New(people.Config{PodLabelEmail: "{owner}@example.org"}, people.Options{Directory: dir})
	_, _, ok, err := p.Resolve(context.Background(), []people.Identity{{Kind: people.KindPodLabel, Name: "owner=bob"}})
	if ok || err == nil {
		t.Errorf("Resolve with Slack down: ok %v, err %v; want an error to try again", ok, err)
	}
}

// FuzzPodLabelMapping maps a pod's process of any labels through a
// section of any pod label mapping and pattern: it never panics, whom it
// finds is whom a mapping or the pattern names, and the labels of a
// process read back as identities.
func FuzzPodLabelMapping(f *testing.F) {
	f.Add("owner", "alice", "owner", "alice", "U0ALICE", "{owner}@example.org")
	f.Add("owner", "bob", "owner", "alice", "U0ALICE", "{owner}@example.org")
	f.Add("example.org/owner", "dave", "team", "cv", "pi@example.org", "{example.org/owner}@example.org")
	f.Add("owner", "a,b=c", "owner", "a,b=c", "U0X", "{owner}")
	f.Add("{owner}", "x", "", "", "", "{}@{}")
	f.Fuzz(func(t *testing.T, labelKey, labelValue, mapKey, mapValue, target, pattern string) {
		cfg := people.Config{PodLabels: map[string]map[string]string{mapKey: {mapValue: target}}, PodLabelEmail: pattern}
		dir := workspace()
		p := people.New(cfg, people.Options{Directory: dir, Now: func() time.Time { return t0 }})
		var labels gpu.PodLabels
		if gpu.IsPodLabelKey(labelKey) {
			labels = gpu.PodLabelsOf([]string{labelKey}, []string{labelValue})
		}
		proc := gpu.Process{PID: 1, User: "root", Container: "k8s:ml/pod-0", PodLabels: labels}
		owners, _, err := p.Owners(context.Background(), []gpu.Process{proc})
		if err != nil {
			t.Fatalf("Owners: %v", err)
		}
		for _, o := range owners {
			switch {
			case o.Via == "people.pod_label_email":
				email, ok := people.PodLabelEmailOf(pattern, labelKey, labelValue)
				if !ok || dir.emails[email] != o.Person.ID {
					t.Errorf("by the pattern %q: %+v, which is not the user of %q", pattern, o.Person, email)
				}
			case string(o.Via) == "people.pod_labels."+mapKey+"."+mapValue:
				if labelKey != mapKey || labelValue != mapValue {
					t.Errorf("label %s=%s mapped by %s", labelKey, labelValue, o.Via)
				}
				tg, err := people.ParseTarget(target)
				if err != nil || (tg.ID != "" && tg.ID != o.Person.ID) || (tg.Email != "" && dir.emails[tg.Email] != o.Person.ID) {
					t.Errorf("mapped to %q: got %+v", target, o.Person)
				}
			default:
				t.Errorf("a pod without a mapped namespace or user mapped by %s", o.Via)
			}
		}
		for _, id := range people.IdentitiesOf(&proc) {
			if back, err := people.ParseIdentity(id.String()); err != nil || back != id {
				t.Errorf("identity %q does not read back: %+v, %v", id, back, err)
			}
		}
		for _, pr := range cfg.Check(func(string) (bool, bool) { return true, true }, func(string) error { return nil }) {
			if len(target) >= 6 && strings.Contains(target, "@") && strings.Contains(pr.Msg, target) {
				t.Errorf("a problem quotes the mapping's value %q: %s", target, pr.Msg)
			}
		}
	})
}
