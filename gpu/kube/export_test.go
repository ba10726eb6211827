package kube

import "io"

// Settle waits for the list under way, if any: Pod never waits for the
// API server, and a test must know when its answer is in.
func Settle(p *Pods) { p.wg.Wait() }

// DecodePodsAtMost is DecodePods of an answer of at most limit bytes.
func DecodePodsAtMost(r io.Reader, keys []string, limit int64) (map[string]Pod, error) {
	return decodePods(r, keys, limit)
}
