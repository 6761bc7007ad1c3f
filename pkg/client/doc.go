// Package client is an OPC UA client (Part 4 services over opc.tcp, Part 6): discovery,
// sessions with anonymous, user name or X509 identities, and the attribute, view and
// method services, with many requests in flight on one secure channel.
//
//	trust, _ := pki.Open("pki", pki.Options{}) // the server's certificate in trusted/certs
//	c, err := client.Dial(ctx, "opc.tcp://plc:4840",
//		client.Security(policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt),
//		client.Certificate(der, key),
//		client.TrustStore(trust),
//		client.UserName("operator", password))
//	if err != nil {
//		return err // errors.Is(err, status.BadUserAccessDenied), ...
//	}
//	defer c.Close(ctx)
//	dv, err := c.ReadValue(ctx, codec.NewStringNodeId(2, "Line1.Speed"))
//	for ref, err := range c.References(ctx, ua.BrowseDescription{NodeId: objects}, 100) {
//		...
//	}
//
// A Client is safe for concurrent use. Each call is one request on the channel; answers
// are matched by request id on the channel's reading goroutine, so a thousand goroutines
// can share one session without a goroutine per request. A failed call is a
// [*StatusError]: errors.Is matches its StatusCode, and a busy server's RetryAfterMs
// hint is in RetryAfter. Per-item results (one node of a Read) are never errors.
//
// Subscriptions (Subscribe, Subscription.Monitor) deliver notifications in
// sequence-number order to a callback or a channel, keep several Publish requests in
// flight, and survive reconnects: gaps are fetched with Republish, and on a new session
// subscriptions are transferred or created again; Failover moves to the healthiest
// server of a redundant set, and Standby keeps a channel open to move onto.
//
// Security is explicit: without the Security option the most secure endpoint other than
// None is chosen, and a server certificate must pass the TrustStore unless
// InsecureSkipVerify is given. When the connection is lost, the next call reconnects
// with the Backoff and re-activates the same session on the new channel (Part 4
// §5.6.3); see RATIONALE.md for what is retried.
package client
