package strictjson_test

import (
	"fmt"

	"github.com/afloat/afloat/internal/strictjson"
)

func ExampleDecode() {
	var req struct {
		Tenant string `json:"tenant"`
		N      *int64 `json:"n"`
	}
	for _, body := range []string{
		`{"tenant":"acme","n":2}`,
		`{"tenant":"fast","tenant":"acme"}`,
		`{"tenant":"acme","n":null}`,
		`{"tenant":"acme","n":1e-400}`,
	} {
		if err := strictjson.Decode([]byte(body), &req); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(req.Tenant, *req.N)
	}
	// Output:
	// acme 2
	// strictjson: tenant: key "tenant" given more than once in the body
	// strictjson: n: null: want a value (leave the key out for its default)
	// strictjson: n: number 1e-400: too small to hold: it would read as 0
}
