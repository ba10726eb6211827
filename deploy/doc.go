// Package deploy holds the tests of what installs gpuwatch: the release
// build and its packages (scripts/release), the systemd unit, the
// Dockerfile, the Kubernetes manifests and the Grafana dashboard. It is a
// module of its own, so the Kubernetes and PromQL libraries its tests use
// to read those files are no dependencies of gpuwatch itself; the tests
// build and run gpuwatch from the repository as a user would.
package deploy
