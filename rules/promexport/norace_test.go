//go:build !race

package promexport_test

const raceDetector = false
