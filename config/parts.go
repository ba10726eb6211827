package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// Part is a top-level section of the config file.
type Part string

// The parts of a config file.
const (
	PartHost      Part = "host"
	PartSource    Part = "source"
	PartStorage   Part = "storage"
	PartServer    Part = "server"
	PartMetrics   Part = "metrics"
	PartSlack     Part = "slack"
	PartReceivers Part = "receivers"
	PartRoute     Part = "route"
	PartRuleFiles Part = "rule_files"
	PartRules     Part = "rules"
	PartDigests   Part = "digests"
	PartPeople    Part = "people"
)

// LoadParts is Load for a command that uses only some parts of the config,
// as a client of the running daemon does (gpuwatch silence uses its
// server: section): ${VAR}s outside the parts are left as written, so one
// that is set only in the daemon's environment (its secrets, in
// /etc/gpuwatch/environment) is no error; what is wrong outside them is not
// reported (gpuwatch check is for that); rule files are read only for
// PartRuleFiles. What is in the parts is expanded and checked as Load does.
func LoadParts(path string, lookup func(string) (string, bool), parts ...Part) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if parts == nil {
		parts = []Part{} // none, not every one
	}
	return parse(path, data, lookup, parts)
}

// uses reports whether parts (nil: every part) holds p.
func uses(parts []Part, p Part) bool { return parts == nil || slices.Contains(parts, p) }

// sections are the top-level sections of a config file as written: each
// key, and the value it names, in the order of the file.
type sections []struct {
	part  Part
	line  int // the key's line
	value *yaml.Node
}

func sectionsOf(root *yaml.Node) sections {
	var out sections
	if root = strictyaml.Resolve(root); root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		out = append(out, struct {
			part  Part
			line  int
			value *yaml.Node
		}{Part(k.Value), k.Line, root.Content[i+1]})
	}
	return out
}

// used returns the values of the sections of parts (nil: every part).
func (ss sections) used(parts []Part) []*yaml.Node {
	var out []*yaml.Node
	for _, s := range ss {
		if uses(parts, s.part) {
			out = append(out, s.value)
		}
	}
	return out
}

// of names the section a line of the file is in; "" before the first.
func (ss sections) of(line int) Part {
	var p Part
	for _, s := range ss {
		if s.line > line {
			break
		}
		p = s.part
	}
	return p
}

// only keeps the problems of errs that are in parts (nil: every part): in
// the file, by the section their line is in; in a rule file, as part of
// rule_files. A problem that says no place is kept.
func (ss sections) only(file string, parts []Part, errs strictyaml.Errors) strictyaml.Errors {
	if parts == nil {
		return errs
	}
	return slices.DeleteFunc(errs, func(e error) bool {
		var pe *strictyaml.Error
		switch {
		case !errors.As(e, &pe):
			return false
		case pe.File != file:
			return !uses(parts, PartRuleFiles)
		}
		p := ss.of(pe.Line)
		return p != "" && !uses(parts, p)
	})
}

// parseDocument parses the config file into its root node. Every setting
// is optional, so a file of comments only is a config that takes every
// default (an empty mapping); a file with nothing in it at all is refused
// as strictyaml refuses it, as a file likely cut short.
func parseDocument(file string, data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 0 && len(bytes.TrimSpace(data)) > 0 {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: 1, Column: 1}, nil
	}
	return strictyaml.Parse(file, data)
}
