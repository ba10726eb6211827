// Package plural writes counts of things the way people read them: "1
// receiver", "2 receivers". gpuwatch's messages count rules, receivers,
// GPUs, alerts and silences.
package plural

import "strconv"

// Count writes n and the noun, with an s unless n is 1.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
