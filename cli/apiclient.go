package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
)

// apiClient talks to a running daemon's HTTP API.
type apiClient struct {
	base   string
	client *http.Client
}

// serverFlags adds --server and --config to a command that talks to the
// daemon.
func serverFlags(fs *flag.FlagSet) (server, configPath *string) {
	server = fs.String("server", "", "the running gpuwatch's address (default: server.listen of --config, else "+config.DefaultListen+")")
	configPath = fs.String("config", "", "the config of the running gpuwatch, to find its address")
	return server, configPath
}

func newAPIClient(env *Env, server, configPath string) (*apiClient, error) {
	addr := server
	if addr == "" && configPath != "" {
		cfg, err := loadConfig(configPath, env)
		if err != nil {
			return nil, err
		}
		addr = cfg.Server.Listen
	}
	if addr == "" {
		addr = config.DefaultListen
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return &apiClient{base: strings.TrimSuffix(addr, "/"), client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// do sends a request and decodes the JSON answer into out; an error answer
// becomes an error with the daemon's message.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return userErrf("--server %q is not a valid address: %v", c.base, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach gpuwatch at %s: is `gpuwatch run` running there? (set --server or --config)", c.base)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		if resp.StatusCode < 500 {
			return userErrf("%s", e.Error)
		}
		return fmt.Errorf("gpuwatch at %s: %s", c.base, e.Error)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// getText fetches a plain-text answer.
func (c *apiClient) getText(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		return "", userErrf("--server %q is not a valid address: %v", c.base, err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("cannot reach gpuwatch at %s: is `gpuwatch run` running there? (set --server or --config)", c.base)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode >= 300 {
		return "", fmt.Errorf("gpuwatch at %s: %s: %s", c.base, resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}
