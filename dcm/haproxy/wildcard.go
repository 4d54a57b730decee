package haproxy

// wildcardDomain is the converter that turns a host into its key in the
// wildcard maps (dcm.WildcardKey): the first label goes, the dot stays,
// so a.example.com becomes .example.com. A host without a dot becomes the
// empty string, which no wildcard key is.
const wildcardDomain = `regsub(^[^.]*,)`
