package server

import (
	"fmt"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// serverProfiles are the Server Profiles (Part 7) named in ServerProfileArray: the
// Nano Embedded Device profile, whose facets (sessions, Read, Write, Browse, Call,
// discovery) this server serves in full.
var serverProfiles = []string{"http://opcfoundation.org/UA-Profile/Server/NanoEmbeddedDevice2017"}

// localeIDs are the locales of the server's LocalizedText values (LocaleIdArray).
var localeIDs = []string{"en"}

// maxServiceLevel is the ServiceLevel of a server that can serve fully (Part 5 §6.3.34,
// Part 4 §6.6.2.4.2: 200..255 is "Healthy"), until the health and the load lower it
// (redundancy.go).
const maxServiceLevel = 255

// initCapabilities publishes the configuration in ServerCapabilities (Part 5 §6.3.2),
// its OperationLimits (§6.3.11) and the Server object's own Variables ServiceLevel,
// Auditing, EstimatedReturnTime and ServerRedundancy.RedundancySupport (§6.3.1). Each
// value is checked against its Variable's DataType; only Variables of the generated
// namespace 0 are set. A limit the server does not enforce is 0, "no limit"
// (Part 5 §6.3.11).
func (s *Server) initCapabilities() error {
	l, o, e, sub := s.cfg.Limits, s.cfg.OperationLimits, s.cfg.Encoding, s.cfg.Subscriptions
	u32 := func(n int) codec.Variant { return codec.UInt32Variant(uint32(min(max(n, 0), 1<<32-1))) }
	u16 := func(n int) codec.Variant { return codec.UInt16Variant(uint16(min(max(n, 0), 1<<16-1))) }
	type value struct {
		id  uint32
		val codec.Variant
	}
	values := []value{
		{id.Server_ServerCapabilities_ServerProfileArray, codec.MustVariant(serverProfiles)},
		{id.Server_ServerCapabilities_LocaleIdArray, codec.MustVariant(localeIDs)},
		// A Duration in milliseconds: what a request for the fastest sampling gets.
		{id.Server_ServerCapabilities_MinSupportedSampleRate, codec.DoubleVariant(float64(sub.MinSamplingInterval) / float64(time.Millisecond))},
		{id.Server_ServerCapabilities_MaxBrowseContinuationPoints, u16(l.MaxBrowseContinuationPoints)},
		{id.Server_ServerCapabilities_MaxQueryContinuationPoints, u16(0)}, // no Query services
		{id.Server_ServerCapabilities_MaxHistoryContinuationPoints, u16(s.cfg.History.MaxContinuationPoints)},
		{id.Server_ServerCapabilities_MaxArrayLength, u32(e.MaxArrayLength)},
		{id.Server_ServerCapabilities_MaxStringLength, u32(e.MaxStringLength)},
		{id.Server_ServerCapabilities_MaxByteStringLength, u32(e.MaxByteStringLength)},
		{id.Server_ServerCapabilities_MaxSessions, u32(l.MaxSessionCount)},
		{id.Server_ServerCapabilities_MaxSubscriptions, u32(l.MaxSubscriptionCount)},
		{id.Server_ServerCapabilities_MaxMonitoredItems, u32(l.MaxMonitoredItemCount)},
		{id.Server_ServerCapabilities_MaxSubscriptionsPerSession, u32(sub.MaxSubscriptionsPerSession)},
		{id.Server_ServerCapabilities_MaxMonitoredItemsPerSubscription, u32(l.MaxMonitoredItemsPerSubscription)},
		{id.Server_ServerCapabilities_MaxMonitoredItemsQueueSize, u32(sub.MaxQueueSize)},
		// Event filters take any number of select clauses and where-clause elements within
		// the encoding limits (encoding.maxArrayLength): no limit of their own.
		{id.Server_ServerCapabilities_MaxSelectClauseParameters, u32(0)},
		{id.Server_ServerCapabilities_MaxWhereClauseParameters, u32(0)},

		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerRead, u32(o.MaxNodesPerRead)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerWrite, u32(o.MaxNodesPerWrite)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerMethodCall, u32(o.MaxNodesPerMethodCall)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerBrowse, u32(o.MaxNodesPerBrowse)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerRegisterNodes, u32(o.MaxNodesPerRegisterNodes)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerTranslateBrowsePathsToNodeIds, u32(o.MaxNodesPerTranslateBrowsePathsToNodeIds)},
		{id.Server_ServerCapabilities_OperationLimits_MaxMonitoredItemsPerCall, u32(o.MaxMonitoredItemsPerCall)},
		// Services the server does not offer answer BadServiceUnsupported before any
		// count is checked.
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerNodeManagement, u32(0)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryReadData, u32(s.cfg.History.MaxNodesPerRead)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryReadEvents, u32(s.cfg.History.MaxNodesPerRead)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryUpdateData, u32(s.cfg.History.MaxNodesPerUpdate)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryUpdateEvents, u32(0)}, // no event updates

		{id.Server_ServiceLevel, codec.ByteVariant(maxServiceLevel)},
		{id.Server_Auditing, codec.BooleanVariant(false)},
		{id.Server_ServerRedundancy_RedundancySupport, codec.Int32Variant(int32(ua.RedundancySupportNone))},
		// Only meaningful while the server is not running (Part 5 §6.3.1); MinTime = unknown.
		{id.Server_EstimatedReturnTime, codec.DateTimeVariant(0)},
	}
	for _, v := range values {
		if err := s.space.SetTypedValue(codec.NewNumericNodeId(0, v.id), v.val); err != nil {
			return fmt.Errorf("server capabilities: %w", err)
		}
	}
	// SignedSoftwareCertificate[] (Part 5 §6.3.2): none. An empty array carries no
	// structure whose type the check could see, so it is stored unchecked.
	soft := codec.NewNumericNodeId(0, id.Server_ServerCapabilities_SoftwareCertificates)
	if !s.space.SetValue(soft, codec.DataValue{Value: codec.MustVariant([]codec.ExtensionObject{})}) {
		return fmt.Errorf("server capabilities: set value of %v: not a variable", soft)
	}
	return s.initHistoryCapabilities()
}
