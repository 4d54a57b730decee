package dcm

// SourceGRPCRoute marks a route made from one rule of a Gateway API
// GRPCRoute attached to one Gateway listener (Route.Gateway): served as
// the HTTPRoute rule matching its calls' paths, with h2c to its pods.
const SourceGRPCRoute RouteSource = "grpcroute"
