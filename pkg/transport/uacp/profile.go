package uacp

// TransportProfile is the transport profile of opc.tcp endpoints: UA TCP, UA Secure
// Conversation and the UA Binary encoding (Part 7, "UA-TCP UA-SC UA-Binary"), as
// EndpointDescription.TransportProfileUri and session diagnostics name it.
const TransportProfile = "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary"
