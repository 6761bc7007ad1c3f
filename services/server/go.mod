module uastack.dev/services/server

go 1.26

require (
	github.com/go-viper/mapstructure/v2 v2.4.0
	github.com/gopcua/opcua v0.8.0
	github.com/knadh/koanf/parsers/yaml v1.1.1
	github.com/knadh/koanf/providers/confmap v1.0.1
	github.com/knadh/koanf/providers/env/v2 v2.0.2
	github.com/knadh/koanf/providers/file v1.2.1
	github.com/knadh/koanf/providers/posflag v1.0.2
	github.com/knadh/koanf/providers/structs v1.0.0
	github.com/knadh/koanf/v2 v2.4.1
	github.com/spf13/pflag v1.1.0
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5
	golang.org/x/crypto v0.59.0
	uastack.dev/pkg v0.0.0
	uastack.dev/services/discovery v0.0.0
	uastack.dev/tools v0.0.0
)

require (
	github.com/fatih/structs v1.1.0 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/knadh/koanf/maps v0.1.2 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace uastack.dev/pkg => ../../pkg

replace uastack.dev/services/discovery => ../discovery

replace uastack.dev/tools => ../../tools
