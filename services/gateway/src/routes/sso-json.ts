import { z } from "zod";
import type { PollSsoDeviceResponse, SignInProvider, SsoDeviceAuthorization, SsoSession } from "@orch/contracts";
import { OperatorOut, iso } from "../schemas.js";
import { operatorJson } from "./operators-json.js";

export const SignInProviderOut = z.object({
  name: z.string(),
  display_name: z.string().describe('the sign-in button says "Sign in with <display_name>"'),
  device_flow: z.boolean().describe("`orchctl login --sso` can use the device authorization grant"),
});
export const SignInProviderList = z.object({ providers: z.array(SignInProviderOut) });

/** A CLI session from single sign-on: the same shape as the key login's verify answer. */
export const SsoTokenOut = z.object({ token: z.string(), expires_at: z.string(), operator: OperatorOut });

export const DeviceAuthorizationOut = z.object({
  device_id: z.string().describe("poll POST /api/v1/auth/sso/device/token with this"),
  user_code: z.string(),
  verification_uri: z.string(),
  verification_uri_complete: z.string().nullable().describe("the verification URI with the code filled in, if given"),
  interval: z.number().int().describe("seconds between polls"),
  expires_at: z.string(),
});

export const DeviceTokenOut = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("pending"),
    interval: z.number().int().describe("seconds to wait before asking again"),
  }),
  SsoTokenOut.extend({ status: z.literal("complete") }),
]);

export function signInProviderJson(p: SignInProvider): z.infer<typeof SignInProviderOut> {
  return { name: p.name, display_name: p.displayName || p.name, device_flow: p.deviceFlow };
}

export function ssoTokenJson(s: SsoSession): z.infer<typeof SsoTokenOut> {
  return { token: s.token, expires_at: iso(s.expiresAt), operator: operatorJson(s.operator!) };
}

export function deviceAuthorizationJson(d: SsoDeviceAuthorization): z.infer<typeof DeviceAuthorizationOut> {
  return {
    device_id: d.deviceId,
    user_code: d.userCode,
    verification_uri: d.verificationUri,
    verification_uri_complete: d.verificationUriComplete || null,
    interval: d.interval,
    expires_at: iso(d.expiresAt),
  };
}

export function deviceTokenJson(r: PollSsoDeviceResponse): z.infer<typeof DeviceTokenOut> {
  if (r.status === "complete" && r.session) return { status: "complete", ...ssoTokenJson(r.session) };
  return { status: "pending", interval: r.interval };
}
