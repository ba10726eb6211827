module github.com/gpuwatch/gpuwatch

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.4-1
	github.com/slack-go/slack v0.35.0
	go.etcd.io/bbolt v1.5.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
