package redact_test

import (
	"fmt"

	"github.com/afloat/afloat/internal/redact"
)

func ExampleURL() {
	fmt.Println(redact.URL("redis://:s3cret@redis.internal:6379/0"))
	fmt.Println(redact.URL("redis://:p@ss@redis.internal")) // net/url cannot parse it
	fmt.Println(redact.URL("redis://127.0.0.1:6379"))
	// Output:
	// redis://xxxxx@redis.internal:6379/0
	// redis://xxxxx@redis.internal
	// redis://127.0.0.1:6379
}
