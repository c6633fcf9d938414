// Package strictjson decodes JSON bodies so that what a client sends
// either means one thing or is refused, with the field at fault named.
//
//	var req struct{ Tenant string `json:"tenant"` }
//	if err := strictjson.Decode(body, &req); err != nil {
//		// 400, with err's message
//	}
//
// It exists because encoding/json is lenient where an API promises
// strictness: of two equal keys the last wins silently (so
// {"tenant":"a","tenant":"b"} reads as b), null leaves a field at its zero
// value (so "n": null reads as an absent n), and a number too small for a
// float64, such as 1e-400, reads as 0.
//
// A body is read twice: once to check it against the type, token by
// token and allocating nothing, then by encoding/json to decode it; the
// check costs a fraction of the decoding (docs/benchmarks.md, "The
// renewal wire"). A refusal names the member at fault, and words
// malformed JSON as encoding/json's Decoder does.
package strictjson
