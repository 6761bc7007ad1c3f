package server

import (
	"errors"
	"fmt"
	"runtime/debug"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// buildInfo describes this build (Part 5 §12.4).
func (s *Server) buildInfo() ua.BuildInfo {
	bi := ua.BuildInfo{
		ProductUri:       s.cfg.Application.ProductURI,
		ManufacturerName: "uastack",
		ProductName:      s.cfg.Application.ApplicationName,
		SoftwareVersion:  "(devel)",
		BuildDate:        s.startTime,
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" {
			bi.SoftwareVersion = v
		}
		for _, kv := range info.Settings {
			if kv.Key == "vcs.revision" {
				bi.BuildNumber = kv.Value
			}
		}
	}
	return bi
}

// initServerObject sets the values of the Server object that the server owns
// (Part 5 §6.3.1): NamespaceArray, ServerArray and ServerStatus, whose CurrentTime and
// whole-structure value are computed at read time.
func (s *Server) initServerObject() error {
	bi := s.buildInfo()
	nsArray, err := codec.VariantOf(s.routes.Namespaces())
	if err != nil {
		return err
	}
	serverArray, err := codec.VariantOf([]string{s.cfg.Application.ApplicationURI})
	if err != nil {
		return err
	}
	biVariant, err := codec.VariantOf(&bi)
	if err != nil {
		return err
	}
	n := func(i uint32) codec.NodeId { return codec.NewNumericNodeId(0, i) }
	set := map[uint32]codec.Variant{
		id.Server_NamespaceArray:                          nsArray,
		id.Server_ServerArray:                             serverArray,
		id.Server_ServerStatus_StartTime:                  codec.DateTimeVariant(s.startTime),
		id.Server_ServerStatus_State:                      codec.Int32Variant(int32(ua.ServerStateRunning)),
		id.Server_ServerStatus_BuildInfo:                  biVariant,
		id.Server_ServerStatus_BuildInfo_ProductUri:       codec.StringVariant(bi.ProductUri),
		id.Server_ServerStatus_BuildInfo_ManufacturerName: codec.StringVariant(bi.ManufacturerName),
		id.Server_ServerStatus_BuildInfo_ProductName:      codec.StringVariant(bi.ProductName),
		id.Server_ServerStatus_BuildInfo_SoftwareVersion:  codec.StringVariant(bi.SoftwareVersion),
		id.Server_ServerStatus_BuildInfo_BuildNumber:      codec.StringVariant(bi.BuildNumber),
		id.Server_ServerStatus_BuildInfo_BuildDate:        codec.DateTimeVariant(bi.BuildDate),
		id.Server_ServerStatus_SecondsTillShutdown:        codec.UInt32Variant(0),
	}
	for i, v := range set {
		if !s.space.SetValue(n(i), codec.DataValue{Value: v}) {
			return fmt.Errorf("set value of i=%d: not a variable", i)
		}
	}
	if !s.space.SetValueFunc(n(id.Server_ServerStatus_CurrentTime), func(now codec.DateTime) codec.DataValue {
		return codec.DataValue{Value: codec.DateTimeVariant(now), SourceTimestamp: now, ServerTimestamp: now}
	}) {
		return errors.New("set value func of Server_ServerStatus_CurrentTime: not a variable")
	}
	start := s.startTime
	if !s.space.SetValueFunc(n(id.Server_ServerStatus), func(now codec.DateTime) codec.DataValue {
		v, err := codec.VariantOf(&ua.ServerStatusDataType{
			StartTime:   start,
			CurrentTime: now,
			State:       ua.ServerStateRunning,
			BuildInfo:   bi,
		})
		if err != nil {
			return codec.DataValue{Status: status.BadInternalError, SourceTimestamp: now, ServerTimestamp: now}
		}
		return codec.DataValue{Value: v, SourceTimestamp: now, ServerTimestamp: now}
	}) {
		return errors.New("set value func of Server_ServerStatus: not a variable")
	}
	return nil
}
