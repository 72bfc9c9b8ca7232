// Swagger UI over the gateway's own document; everything it loads comes from this server.
window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  defaultModelsExpandDepth: 0,
  tryItOutEnabled: false,
  validatorUrl: null,
})
