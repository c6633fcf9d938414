package regionhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
	"github.com/afloat/afloat/quota/region/regionhttp"
)

// A region with a lease of a token a second and a burst of 2, on a clock
// the example holds still: two requests pass, the third is refused with
// 429 and a Retry-After of the next refill (a second, derated for the
// clock's possible drift) rounded up to the second; a tenant the region
// does not serve gets 403.
func ExampleMiddleware() {
	lim, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		panic(err)
	}
	req, _ := lim.Request(0, "acme")
	lim.Install(0, quota.Grant{ // what the coordinator would answer
		Lease:    quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: 1, Rate: 1 * quota.One, Burst: 2 * quota.One, Transfer: 2 * quota.One},
		Seq:      req.Seq,
		ValidFor: time.Hour, Margin: time.Second,
	})
	keys := map[string]string{"key-acme": "acme", "key-mallory": "mallory"} // API keys, as the caller checks them
	mw, err := regionhttp.Middleware(lim, func(r *http.Request) string { return keys[r.Header.Get("Authorization")] },
		regionhttp.WithNow(func() int64 { return 0 }))
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	for _, key := range []string{"key-acme", "key-acme", "key-acme", "key-mallory"} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", key)
		h.ServeHTTP(rec, r)
		if ra := rec.Header().Get("Retry-After"); ra != "" {
			fmt.Println(rec.Code, "Retry-After:", ra)
			continue
		}
		fmt.Println(rec.Code)
	}
	// Output:
	// 200
	// 200
	// 429 Retry-After: 2
	// 403
}
