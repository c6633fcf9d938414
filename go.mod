module github.com/afloat/afloat

go 1.26
