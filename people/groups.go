package people

import (
	"context"
	"errors"
	"slices"
)

// Team is a group with its leads resolved: whom its digest goes to, and
// whose usage it counts.
type Team struct {
	Name    string
	Leads   []Person
	Members []Identity
}

// Teams are the groups whose leads Slack knows. A lead Slack does not
// know is left out (gpuwatch check says so); an error means Slack could
// not be asked.
func (p *People) Teams(ctx context.Context) ([]Team, error) {
	var out []Team
	for _, g := range p.cfg.Groups {
		t := Team{Name: g.Name}
		for _, m := range g.Members {
			if id, err := ParseIdentity(m); err == nil {
				t.Members = append(t.Members, id)
			}
		}
		for _, l := range g.Leads {
			target, err := ParseTarget(l)
			if err != nil {
				continue
			}
			person, err := p.ofTarget(ctx, target)
			switch {
			case err == nil:
				if !slices.ContainsFunc(t.Leads, func(q Person) bool { return q.ID == person.ID }) {
					t.Leads = append(t.Leads, person)
				}
			case errors.Is(err, ErrUnknown):
			default:
				return nil, err
			}
		}
		if len(t.Leads) > 0 {
			out = append(out, t)
		}
	}
	return out, nil
}

// Counts reports whether a digest's user (a Unix user, or "NAMESPACE/POD")
// is one of the team's members.
func (t *Team) Counts(user string) bool {
	return slices.ContainsFunc(t.Members, func(id Identity) bool {
		switch id.Kind {
		case KindUser:
			return id.Name == user
		case KindNamespace:
			ns, _, ok := cutNamespace(user)
			return ok && ns == id.Name
		}
		return false
	})
}

// cutNamespace splits a digest's "NAMESPACE/POD".
func cutNamespace(user string) (ns, pod string, ok bool) {
	for i := 0; i < len(user); i++ {
		if user[i] == '/' {
			return user[:i], user[i+1:], i > 0
		}
	}
	return "", "", false
}
