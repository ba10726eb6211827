module github.com/gpuwatch/gpuwatch

go 1.26

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/prometheus/procfs v0.23.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
