/** The OpenAPI document of the HTTP API (served at /openapi.json). */
export const openApiDocument = {
  openapi: '3.1.0',
  info: { title: 'Serverless Kafka-semantics log', version: '0.1.0' },
  paths: {},
};
