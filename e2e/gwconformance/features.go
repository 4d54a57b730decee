// Package gwconformance runs the Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance, unmodified) against dcm. It is a
// module of its own so that the suite's dependencies (controller-runtime and
// the rest) stay out of dcm's go.mod and out of its go test ./...; make
// conformance starts the cluster, dcm and the test kubelet (e2e/gwenv) and
// then runs this package's TestConformance against them.
package gwconformance

import (
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// GatewayClassName is the GatewayClass the suite's Gateways use; make
// conformance creates it with dcm's controller name.
const GatewayClassName = "dcm"

// Profiles are the conformance profiles dcm claims: GATEWAY-HTTP,
// GATEWAY-GRPC and GATEWAY-TLS (TLSRoute passthrough), in one run of the
// suite.
var Profiles = []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName, suite.GatewayGRPCConformanceProfileName,
	suite.GatewayTLSConformanceProfileName}

// SupportedFeatures are the features dcm claims: the core of GATEWAY-HTTP
// and the extended features whose tests pass (docs/conformance.md says why
// the others are not claimed). An extended feature dcm comes to support is
// added here, so that its tests run and the report lists it, and to the
// GatewayClass's supportedFeatures (dcm/kube's supportedFeatures), which
// say the same.
var SupportedFeatures = []features.FeatureName{
	features.SupportGateway,
	features.SupportReferenceGrant,
	features.SupportHTTPRoute,
	features.SupportTLSRoute, // GATEWAY-TLS core: Passthrough only (TLSRouteModeTerminate not claimed)

	features.SupportGatewayPort8080,
	features.SupportGatewayHTTPListenerIsolation,
	features.SupportHTTPRouteQueryParamMatching,
	features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRouteResponseHeaderModification,
	features.SupportHTTPRoutePortRedirect,
	features.SupportHTTPRouteSchemeRedirect,
	features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRouteHostRewrite,
	features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRouteParentRefPort,
	features.SupportHTTPRouteDestinationPortMatching,
	features.SupportHTTPRoute303RedirectStatusCode,
	features.SupportHTTPRoute307RedirectStatusCode,
	features.SupportHTTPRoute308RedirectStatusCode,
	features.SupportHTTPRouteNamedRouteRule,
	features.SupportHTTPRouteBackendProtocolWebSocket,
	features.SupportHTTPRouteBackendProtocolH2C,
	features.SupportGatewayAddressEmpty,
	features.SupportGatewayStaticAddresses, // addresses of UsableAddressEnv and UnusableAddressEnv

	// GATEWAY-GRPC: its core and its one extended feature.
	features.SupportGRPCRoute,
	features.SupportGRPCRouteNamedRouteRule,
}
