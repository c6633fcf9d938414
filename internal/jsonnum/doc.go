// Package jsonnum reads whole numbers from JSON exactly, for the decoders
// of the console's API and the simulator's action files.
//
//	n, err := jsonnum.Int(raw) // raw: a json.RawMessage
//
// It exists because the obvious ways are lenient: decoding into a float64
// reads null as "leave it alone" (so "minute": null ran at minute 0), and
// strconv.ParseFloat reads 1e-400 as 0 and 1.0000000000000001 as 1, each a
// number that is not a whole one taken as one.
package jsonnum
