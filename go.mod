module github.com/gpuwatch/gpuwatch

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.4-1
	gopkg.in/yaml.v3 v3.0.1
)
