// Package lua holds the Lua scripts of package assign and the Redis keys
// they run on, so that assign and its benchmark harness (assignbench, which
// hands the pick's SHA-1 to redis-benchmark) run the very same script
// without assign exporting it.
package lua
