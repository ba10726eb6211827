// Package gpuwatch holds what the gpuwatch binary ships inside itself: the
// example configuration, whose rules `gpuwatch demo` and `gpuwatch replay`
// use when no config is given. The code lives in the subpackages: gpu
// (sources), rules (the rule engine), notifier (delivery), config and cli.
package gpuwatch

import _ "embed"

// ExampleConfig is config.example.yaml, the documented starting point for a
// user's own config.
//
//go:embed config.example.yaml
var ExampleConfig []byte
