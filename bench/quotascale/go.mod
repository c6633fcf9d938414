module github.com/afloat/afloat/bench/quotascale

go 1.26.0

replace github.com/afloat/afloat => ../..

require github.com/afloat/afloat v0.0.0-00010101000000-000000000000
