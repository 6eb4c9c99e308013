module tessera

go 1.26.8
