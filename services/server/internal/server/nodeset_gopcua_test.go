package server_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
)

// pumpSettings is the pump model's PumpSettings structure as gopcua decodes it, by
// reflection over the fields in the order of the DataTypeDefinition.
type pumpSettings struct {
	Speed     float64
	Label     string
	Limits    *ua.Range
	Mode      int32
	Health    int32
	Setpoints []float64
}

var registerPumpSettings sync.Once

// TestNodesetGopcua: gopcua's client browses DI and the pump model, reads the
// instance's properties and the structure value it decodes with a Go struct registered
// for the structure's binary encoding, writes a writable variable and sees the change on
// a monitored item; a read-only one refuses the write.
func TestNodesetGopcua(t *testing.T) {
	t.Parallel()
	registerPumpSettings.Do(func() { ua.RegisterExtensionObject(ua.NewNumericNodeID(nsPump, 5001), new(pumpSettings)) })
	ts := nodesetServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	time.Sleep(300 * time.Millisecond) // see TestSubscriptionGopcua

	nsArray, err := c.NamespaceArray(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"http://opcfoundation.org/UA/", "urn:uastack:demo", "http://opcfoundation.org/UA/DI/", "urn:uastack:test:pump"}, nsArray)

	// Objects -> DeviceSet (DI) -> Pump1 -> its properties and variables.
	names := func(id *ua.NodeID) map[string]*ua.NodeID {
		resp, err := c.Browse(ctx, &ua.BrowseRequest{NodesToBrowse: []*ua.BrowseDescription{{
			NodeID: id, BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeID: ua.NewNumericNodeID(0, 33),
			IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll),
		}}})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, resp.Results[0].StatusCode)
		out := map[string]*ua.NodeID{}
		for _, r := range resp.Results[0].References {
			out[r.BrowseName.Name] = r.NodeID.NodeID
		}
		return out
	}
	deviceSet := names(ua.NewNumericNodeID(0, 85))["DeviceSet"]
	require.NotNil(t, deviceSet)
	require.Equal(t, "ns=2;i=5001", deviceSet.String())
	pump := names(deviceSet)["Pump1"]
	require.NotNil(t, pump)
	require.Equal(t, "ns=3;i=6001", pump.String())
	props := names(pump)
	for _, n := range []string{"SerialNumber", "Manufacturer", "RevisionCounter", "DeviceHealth", "Settings", "Speed", "Temperature"} {
		require.Contains(t, props, n)
	}
	// DI's types hang below namespace 0's: BaseObjectType's subtypes include DI's.
	sub, err := c.Browse(ctx, &ua.BrowseRequest{NodesToBrowse: []*ua.BrowseDescription{{
		NodeID: pump, BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeID: ua.NewNumericNodeID(0, 40),
		ResultMask: uint32(ua.BrowseResultMaskAll),
	}}})
	require.NoError(t, err)
	require.Equal(t, "ns=3;i=1001", sub.Results[0].References[0].NodeID.NodeID.String())

	read := func(ids ...*ua.ReadValueID) []*ua.DataValue {
		resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: ids, TimestampsToReturn: ua.TimestampsToReturnBoth})
		require.NoError(t, err)
		return resp.Results
	}
	value := func(id *ua.NodeID) *ua.ReadValueID {
		return &ua.ReadValueID{NodeID: id, AttributeID: ua.AttributeIDValue}
	}
	res := read(value(props["SerialNumber"]), value(props["Manufacturer"]), value(props["Settings"]),
		&ua.ReadValueID{NodeID: ua.NewNumericNodeID(nsPump, 3001), AttributeID: ua.AttributeIDDataTypeDefinition},
		&ua.ReadValueID{NodeID: props["Speed"], AttributeID: ua.AttributeIDHistorizing},
		&ua.ReadValueID{NodeID: props["Temperature"], AttributeID: ua.AttributeIDUserAccessLevel},
		&ua.ReadValueID{NodeID: ua.NewNumericNodeID(nsDI, 1002), AttributeID: ua.AttributeIDIsAbstract})
	for i, r := range res {
		require.Equal(t, ua.StatusOK, r.Status, "item %d", i)
	}
	require.Equal(t, "SN-0042", res[0].Value.Value())
	require.Equal(t, "uastack pumps", res[1].Value.Value().(*ua.LocalizedText).Text)
	eo := res[2].Value.Value().(*ua.ExtensionObject)
	ps, ok := eo.Value.(*pumpSettings)
	require.True(t, ok, "%T", eo.Value)
	require.Equal(t, pumpSettings{Speed: 1450.5, Label: "main pump", Limits: &ua.Range{Low: 0, High: 3000}, Mode: 2, Health: 0, Setpoints: []float64{100, 200.25}}, *ps)
	def, ok := res[3].Value.Value().(*ua.ExtensionObject).Value.(*ua.StructureDefinition)
	require.True(t, ok, "%T", res[3].Value.Value().(*ua.ExtensionObject).Value)
	require.Equal(t, "ns=3;i=5001", def.DefaultEncodingID.String())
	require.Len(t, def.Fields, 6)
	require.Equal(t, "Setpoints", def.Fields[5].Name)
	require.Equal(t, true, res[4].Value.Value(), "Historizing kept")
	require.Equal(t, byte(1), res[5].Value.Value())
	require.Equal(t, true, res[6].Value.Value())

	// Monitor Speed, write it, see the change; the read-only Temperature refuses.
	ch := make(chan *opcua.PublishNotificationData, 16)
	subn, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 50 * time.Millisecond}, ch)
	require.NoError(t, err)
	got := collect(ctx, t, ch, 1)
	mres, err := subn.Monitor(ctx, ua.TimestampsToReturnBoth, opcua.NewMonitoredItemCreateRequestWithDefaults(props["Speed"], ua.AttributeIDValue, 1))
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, mres.Results[0].StatusCode)
	require.Equal(t, 1450.5, got.next(1, 5*time.Second).value)

	write := func(id *ua.NodeID, v any) ua.StatusCode {
		resp, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{
			NodeID: id, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)},
		}}})
		require.NoError(t, err)
		return resp.Results[0]
	}
	require.Equal(t, ua.StatusOK, write(props["Speed"], 99.5))
	require.Equal(t, 99.5, got.next(1, 5*time.Second).value)
	require.Equal(t, ua.StatusBadNotWritable, write(props["Temperature"], 30.0))
	require.Equal(t, ua.StatusBadTypeMismatch, write(props["Speed"], "fast"))

	// A structure written by the client, decoded by the server through the model's
	// definition, read back.
	ps.Speed, ps.Label, ps.Setpoints = 10, "written", []float64{1}
	require.Equal(t, ua.StatusOK, write(props["Settings"], ua.NewExtensionObject(ps)))
	back := read(value(props["Settings"]))[0].Value.Value().(*ua.ExtensionObject).Value.(*pumpSettings)
	require.Equal(t, ps, back)
}

// TestNodesetStartErrors: a broken file stops the start with its file and line, a
// missing required model with its URI.
func TestNodesetStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pump, err := os.ReadFile(pumpNodeset)
	require.NoError(t, err)
	broken := filepath.Join(dir, "broken.xml")
	require.NoError(t, os.WriteFile(broken, []byte(strings.Replace(string(pump), "<Label>main pump</Label>", "<Label>main pump</Labl>", 1)), 0o600))
	line := strings.Count(string(pump)[:strings.Index(string(pump), "<Label>main pump")], "\n") + 1
	cases := map[string]struct {
		files []string
		want  string
	}{
		"broken file":   {[]string{diNodeset, broken}, broken + ":" + strconv.Itoa(line) + ":"},
		"missing model": {[]string{pumpNodeset}, "required model not loaded: http://opcfoundation.org/UA/DI/"},
		"no such file":  {[]string{filepath.Join(dir, "none.xml")}, "none.xml"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Endpoint.ListenAddress = "127.0.0.1:0"
			cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
			cfg.AddressSpace.Nodesets = tc.files
			require.NoError(t, cfg.Validate())
			_, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
