package daemon_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/store"
)

// TestUnreadableRecordsSetAside: one record gpuwatch cannot read, in any
// bucket it reads at start, no longer stops it: the record is set aside
// (moved, its bytes kept), the log says which it was and what it held,
// and /healthz lists it.
func TestUnreadableRecordsSetAside(t *testing.T) {
	for _, c := range []struct{ bucket, key string }{
		{daemon.BucketSilences, "3f2a9c1b7e4d0a11"},
		{daemon.BucketAlerts, "GPUHot/GPU-0"},
		{notifier.BucketGroups, "hook/GPUHot/firing"},
		{notifier.BucketSent, "hook/node1/GPUHot/GPU-0"},
		{notifier.BucketAcks, "node1/GPUHot/GPU-0"},
		{daemon.BucketRollups, "2026-11-29T09/gpu/GPU-0"},
		{daemon.BucketDigests, "daily"},
		{daemon.BucketSource, "down"},
	} {
		t.Run(c.bucket, func(t *testing.T) {
			dir := t.TempDir()
			held := "{\"id\":\x00\xff damaged"
			db, err := store.Open(filepath.Join(dir, "state.db"), store.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Put(c.bucket, c.key, []byte(held)); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			r := start(t, webhookConfig(t, dir, "http://127.0.0.1:1/hook", "1ns"), nil)
			logs := r.Logs.String()
			for _, want := range []string{"set aside a record gpuwatch cannot read", "bucket=" + c.bucket, "key=" + c.key,
				`held="{\"id\":\x00\xff damaged"`} {
				if !strings.Contains(logs, want) {
					t.Errorf("the log does not say %q:\n%s", want, logs)
				}
			}
			code, body := r.Do(http.MethodGet, "/healthz", "")
			if want := fmt.Sprintf("store: set aside: %s %q (%d bytes)", c.bucket, c.key, len(held)); code != http.StatusOK || !strings.Contains(body, want) {
				t.Errorf("GET /healthz: HTTP %d %q, want 200 listing %q", code, body, want)
			}
			r.Stop()
			db, err = store.Open(filepath.Join(dir, "state.db"), store.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, ok, _ := db.Get(c.bucket, c.key); ok {
				t.Errorf("the record is still in %s", c.bucket)
			}
			kept, err := db.SetAsideRecords()
			if err != nil || len(kept) != 1 || string(kept[0].Value) != held {
				t.Errorf("set-aside records: %v %v, want the record as it was", kept, err)
			}
		})
	}
}

// TestEmptyStoreFileSaid: a store file emptied (0 bytes) is made into a
// new store, and the log and /healthz say what that may have lost.
func TestEmptyStoreFileSaid(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "state.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, webhookConfig(t, dir, "http://127.0.0.1:1/hook", "1ns"), nil)
	if logs := r.Logs.String(); !strings.Contains(logs, "the store was damaged") || !strings.Contains(logs, "was an empty file (0 bytes)") {
		t.Errorf("the log does not say the store was an empty file:\n%s", logs)
	}
	if code, body := r.Do(http.MethodGet, "/healthz", ""); code != http.StatusOK || !strings.Contains(body, "store: "+filepath.Join(dir, "state.db")+" was an empty file") {
		t.Errorf("GET /healthz: HTTP %d %q, want 200 saying the store was an empty file", code, body)
	}
}
