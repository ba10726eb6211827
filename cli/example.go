package cli

import (
	"github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/config"
)

// exampleConfigName names the built-in config in messages.
const exampleConfigName = "config.example.yaml (built in)"

// configOrExample loads the parts of the config at path a command uses
// (see config.LoadParts), or the built-in example when path is empty.
func configOrExample(path string, env *Env, parts ...config.Part) (*config.Config, error) {
	if path != "" {
		return loadConfigParts(path, env, parts...)
	}
	lookup := env.lookup()
	cfg, err := config.Parse(exampleConfigName, gpuwatch.ExampleConfig, lookup)
	if err != nil {
		return nil, err // the built-in config is tested; this is a bug
	}
	return cfg, nil
}

// exampleRuleConditions maps each rule of the built-in example config to
// its condition, so a rule copied from it unchanged can be recognised.
func exampleRuleConditions() map[string]string {
	cfg, err := config.Parse(exampleConfigName, gpuwatch.ExampleConfig, func(string) (string, bool) { return "", false })
	if err != nil {
		return nil // the built-in config is tested; it parses
	}
	conditions := make(map[string]string, len(cfg.Rules))
	for _, r := range cfg.Rules {
		conditions[r.Name] = r.When.String()
	}
	return conditions
}
