package uasc

import (
	"math"

	"uastack.dev/pkg/codec"
)

// responseLimits decode the responses of the server a client chose. They have no decode
// budget (codec.Limits.MaxDecodeMultiple), as before there was one: a response's shape is
// the server's answer to what the client asked, and a conforming one may take far more
// memory than its wire size (a Read of null values without timestamps takes 88 bytes per
// byte). The server's requests have the budget of ServerConfig.Decode.
var responseLimits = codec.Limits{MaxDecodeMultiple: math.MaxInt}
