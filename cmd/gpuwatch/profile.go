//go:build profile

package main

import (
	"net"
	"net/http"
	_ "net/http/pprof" // the profiles, on http.DefaultServeMux
	"os"
)

// A binary built with -tags profile serves Go's profiles (net/http/pprof)
// at GPUWATCH_PROFILE_ADDR when it is set: the hub benchmark profiles
// the running hub that way. The released binary has no such listener.
func init() {
	addr := os.Getenv("GPUWATCH_PROFILE_ADDR")
	if addr == "" {
		return
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		panic("GPUWATCH_PROFILE_ADDR: " + err.Error())
	}
	go http.Serve(l, nil)
}
