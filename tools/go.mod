module uastack.dev/tools

go 1.26

require (
	github.com/stretchr/testify v1.12.1
	golang.org/x/crypto v0.59.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace uastack.dev/pkg => ../pkg

require uastack.dev/pkg v0.0.0
