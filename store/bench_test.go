package store

import (
	"bytes"
	"fmt"
	"testing"
)

// openBench opens a store in b.TempDir() with real fsync unless noSync.
func openBench(b *testing.B, noSync bool) *DB {
	b.Helper()
	db, err := Open(tempPath(b), Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

var benchPayload = bytes.Repeat([]byte("x"), 1024)

// BenchmarkEnqueueFsync measures one durable write of a ~1 KiB payload:
// the cost a notification pays before its first delivery attempt. Each is
// acked off the clock, as a receiver that keeps up does, so the queue stays
// as short as it is live instead of growing with b.N (and the file, and
// the figure, with it).
func BenchmarkEnqueueFsync(b *testing.B) {
	db := openBench(b, false)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchPayload)))
	b.ResetTimer()
	for range b.N {
		ids, err := db.Enqueue("bench", benchPayload)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := db.Ack("bench", ids...); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkEnqueueAck measures a notification's whole outbox life: one
// durable enqueue and one durable ack.
func BenchmarkEnqueueAck(b *testing.B) {
	db := openBench(b, false)
	b.ReportAllocs()
	for b.Loop() {
		ids, err := db.Enqueue("bench", benchPayload)
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Ack("bench", ids...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPending reads a batch of 100 from a queue of 1,000, as a worker
// does after a restart or an outage.
func BenchmarkPending(b *testing.B) {
	db := openBench(b, true)
	payloads := make([][]byte, 1000)
	for i := range payloads {
		payloads[i] = benchPayload
	}
	if _, err := db.Enqueue("bench", payloads...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		es, err := db.Pending("bench", 100)
		if err != nil {
			b.Fatal(err)
		}
		if len(es) != 100 {
			b.Fatalf("Pending: got %d entries, want 100", len(es))
		}
	}
}

// BenchmarkEnqueueBatch100 writes 100 payloads in one durable transaction,
// as a dispatcher that batches does: fsync's cost is shared by all of them.
func BenchmarkEnqueueBatch100(b *testing.B) {
	db := openBench(b, false)
	payloads := make([][]byte, 100)
	for i := range payloads {
		payloads[i] = benchPayload
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.Enqueue("bench", payloads...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(payloads)), "ns/payload")
}

// BenchmarkOpenChecked measures Open of a store of 32 MiB (a month of
// rollups and a long outage's outbox is less): every page is checked
// before gpuwatch writes to it.
func BenchmarkOpenChecked(b *testing.B) {
	path := tempPath(b)
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 32 {
		payloads := make([][]byte, 1024)
		for j := range payloads {
			payloads[j] = benchPayload
		}
		if _, err := db.Enqueue(fmt.Sprintf("receiver-%d", i%4), payloads...); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		db, err := Open(path, Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		_ = db.Close()
	}
}
