module tessera

go 1.26.8

require google.golang.org/protobuf v1.36.11
