// The shapes of the API's requests and answers, named from src/schema.d.ts,
// which openapi-typescript generates from api/openapi.yaml: a field the spec
// renames or retypes breaks the build here, not a user's program at run time.
export {};
