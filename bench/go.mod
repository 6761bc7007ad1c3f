module uastack.dev/bench

go 1.26

require (
	github.com/gopcua/opcua v0.8.0
	github.com/stretchr/testify v1.12.1
	uastack.dev/pkg v0.0.0
	uastack.dev/tools v0.0.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace uastack.dev/pkg => ../pkg

replace uastack.dev/tools => ../tools
