//go:build race

package overload

const raceEnabled = true
