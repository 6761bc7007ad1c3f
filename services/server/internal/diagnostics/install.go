package diagnostics

import (
	"errors"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
)

// Install has the ServerDiagnostics Variables of the Server object in space computed when
// read (Part 5 §6.3.3): the summary and its components, SessionDiagnosticsArray,
// SessionSecurityDiagnosticsArray, SubscriptionDiagnosticsArray and EnabledFlag (read
// only here: the setting belongs to the configuration). Every value carries the time its
// snapshot was built as SourceTimestamp.
func (d *Diagnostics) Install(space *addrspace.Space) error {
	summary := func(f func(*ua.ServerDiagnosticsSummaryDataType) uint32) func(*snapshot) codec.Variant {
		return func(snap *snapshot) codec.Variant { return codec.UInt32Variant(f(&snap.summary)) }
	}
	type source struct {
		id  uint32
		val func(*snapshot) codec.Variant
	}
	const p = id.Server_ServerDiagnostics_ServerDiagnosticsSummary
	sources := []source{
		{p, func(snap *snapshot) codec.Variant { return codec.MustVariant(&snap.summary) }},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_ServerViewCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.ServerViewCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.CurrentSessionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSessionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.CumulatedSessionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedSessionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.SecurityRejectedSessionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedSessionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.RejectedSessionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionTimeoutCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.SessionTimeoutCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionAbortCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.SessionAbortCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSubscriptionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.CurrentSubscriptionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSubscriptionCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.CumulatedSubscriptionCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_PublishingIntervalCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.PublishingIntervalCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedRequestsCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.SecurityRejectedRequestsCount })},
		{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedRequestsCount, summary(func(x *ua.ServerDiagnosticsSummaryDataType) uint32 { return x.RejectedRequestsCount })},
		{id.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray, func(snap *snapshot) codec.Variant { return snap.sessions }},
		{id.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray, func(snap *snapshot) codec.Variant { return snap.security }},
		{id.Server_ServerDiagnostics_SubscriptionDiagnosticsArray, func(snap *snapshot) codec.Variant { return snap.subs }},
	}
	for _, src := range sources {
		val := src.val
		if !space.SetValueFunc(codec.NewNumericNodeId(0, src.id), func(now codec.DateTime) codec.DataValue {
			snap := d.current()
			return codec.DataValue{Value: val(snap), SourceTimestamp: snap.at, ServerTimestamp: now}
		}) {
			return errors.New("server diagnostics: set value func: not a variable")
		}
	}
	// Who is logged in, how and with which certificate is for security administrators
	// only (Part 5 §6.3.4: "only visible to authorized users").
	if !space.SetReadRoles(codec.NewNumericNodeId(0, id.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray),
		codec.NewNumericNodeId(0, id.WellKnownRole_SecurityAdmin)) {
		return errors.New("server diagnostics: read roles of SessionSecurityDiagnosticsArray: not a variable")
	}
	enabled := codec.BooleanVariant(d.enabled)
	if !space.SetValueFunc(codec.NewNumericNodeId(0, id.Server_ServerDiagnostics_EnabledFlag), func(now codec.DateTime) codec.DataValue {
		return codec.DataValue{Value: enabled, SourceTimestamp: now, ServerTimestamp: now}
	}) {
		return errors.New("server diagnostics: set value func of EnabledFlag: not a variable")
	}
	return nil
}
