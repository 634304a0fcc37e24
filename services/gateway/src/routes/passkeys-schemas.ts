import { z } from "zod";

/** WebAuthn JSON (PublicKeyCredential*OptionsJSON, RegistrationResponseJSON…): checked by the auth service. */
export const WebAuthnJson = z.record(z.string(), z.unknown());
export const Options = z.object({ options: WebAuthnJson });
export const PasskeyId = z.string().min(1).max(128);
export const OperatorId = z.string().min(1).max(128);
