package jsonnum_test

import (
	"fmt"

	"github.com/afloat/afloat/internal/jsonnum"
)

func ExampleInt() {
	for _, raw := range []string{"28", "1e3", "1.5", "1e-400", "null"} {
		n, err := jsonnum.Int([]byte(raw))
		fmt.Println(raw, n, err)
	}
	// Output:
	// 28 28 <nil>
	// 1e3 1000 <nil>
	// 1.5 0 jsonnum: not a whole number: "1.5"
	// 1e-400 0 jsonnum: not a whole number: "1e-400"
	// null 0 jsonnum: not a JSON number: "null"
}
