package rules

import (
	"path"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// GPUSelector picks GPUs by index, by UUID, or by a glob on the name; or,
// with a Profile, the MIG instances of a profile on the GPUs the rest
// picks ("*/1g.10gb": every 1g.10gb slice; "0/*": every instance of GPU
// 0). A GPU picked by index or UUID brings its MIG instances with it: they
// are part of it, and readings of the card stay on the GPU itself.
type GPUSelector struct {
	Index    int    // -1 when not by index
	UUID     string // "" when not by UUID
	NameGlob string // "" when not by name
	// Profile is a glob on a MIG instance's profile ("1g.10gb", "*"); ""
	// picks whole GPUs and instances alike.
	Profile string
}

// Matches reports whether the selector picks the device: a whole GPU or a
// MIG instance.
func (s GPUSelector) Matches(d *gpu.Device) bool {
	if s.Profile != "" {
		if d.MIG == nil {
			return false
		}
		if ok, _ := path.Match(s.Profile, d.MIG.Profile); !ok {
			return false
		}
		switch {
		case s.Index >= 0:
			return s.Index == d.Index
		case s.UUID != "":
			return strings.EqualFold(s.UUID, d.ParentUUID())
		}
		return true // "*/PROFILE": any GPU's
	}
	switch {
	case s.Index >= 0:
		return s.Index == d.Index
	case s.UUID != "":
		return strings.EqualFold(s.UUID, d.UUID) || d.MIG != nil && strings.EqualFold(s.UUID, d.MIG.ParentUUID)
	default:
		ok, _ := path.Match(s.NameGlob, d.Name)
		return ok
	}
}

// AppliesTo reports whether the rule evaluates on the device.
func (r *Rule) AppliesTo(d *gpu.Device) bool {
	if len(r.GPUs) == 0 {
		return true
	}
	for _, s := range r.GPUs {
		if s.Matches(d) {
			return true
		}
	}
	return false
}

// selectorForms says what a gpus entry may be, for errors.
const selectorForms = `an index (0), a UUID (GPU-…, MIG-…), a name glob ("NVIDIA A100*") or MIG instances by profile ("*/1g.10gb", "0/*")`

func (p *ruleParser) gpuSelector(n *yaml.Node) GPUSelector {
	n = strictyaml.Resolve(n)
	if n.Kind != yaml.ScalarNode {
		p.fail(n, "gpus entries must be %s", selectorForms)
		return GPUSelector{Index: -1, NameGlob: "-"}
	}
	v := n.Value
	if strings.HasPrefix(v, "MIG-") {
		return GPUSelector{Index: -1, UUID: v}
	}
	if parent, profile, ok := strings.Cut(v, "/"); ok {
		return p.instanceSelector(n, parent, profile)
	}
	if s, ok := p.gpuPart(n, v); ok {
		return s
	}
	if _, err := path.Match(v, ""); err != nil {
		p.fail(n, "GPU name glob %q is malformed: %v", v, err)
	}
	return GPUSelector{Index: -1, NameGlob: v}
}

// gpuPart parses an index or a GPU UUID; ok is false for anything else.
func (p *ruleParser) gpuPart(n *yaml.Node, v string) (GPUSelector, bool) {
	if i, err := strconv.Atoi(v); err == nil {
		if i < 0 {
			p.fail(n, "GPU index %d must be 0 or more", i)
		}
		return GPUSelector{Index: i}, true
	}
	if strings.HasPrefix(v, "GPU-") {
		return GPUSelector{Index: -1, UUID: v}, true
	}
	return GPUSelector{}, false
}

// instanceSelector parses PARENT/PROFILE: the parent "*", an index or a
// GPU UUID, the profile a glob.
func (p *ruleParser) instanceSelector(n *yaml.Node, parent, profile string) GPUSelector {
	bad := GPUSelector{Index: -1, NameGlob: "-"}
	if profile == "" || strings.Contains(profile, "/") {
		p.fail(n, "MIG selector %q must be PARENT/PROFILE, the parent *, an index or a GPU UUID and the profile a glob: \"*/1g.10gb\", \"0/*\"", n.Value)
		return bad
	}
	if _, err := path.Match(profile, ""); err != nil {
		p.fail(n, "MIG profile glob %q is malformed: %v", profile, err)
		return bad
	}
	s := GPUSelector{Index: -1}
	if parent != "*" {
		var ok bool
		if s, ok = p.gpuPart(n, parent); !ok {
			p.fail(n, "MIG selector %q: the parent %q must be *, an index (0) or a GPU UUID (GPU-…)", n.Value, parent)
			return bad
		}
	}
	s.Profile = profile
	return s
}
