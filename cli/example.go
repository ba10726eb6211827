package cli

import (
	"github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/config"
)

// exampleConfigName names the built-in config in messages.
const exampleConfigName = "config.example.yaml (built in)"

// configOrExample loads the config at path, or the built-in example when
// path is empty.
func configOrExample(path string, env *Env) (*config.Config, error) {
	if path != "" {
		return loadConfig(path, env)
	}
	lookup := env.lookup()
	cfg, err := config.Parse(exampleConfigName, gpuwatch.ExampleConfig, lookup)
	if err != nil {
		return nil, err // the built-in config is tested; this is a bug
	}
	return cfg, nil
}
