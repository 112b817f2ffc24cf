import { isObj, type Obj } from "./projection/wire.js";

/** Values a new ACP session offers to choose from (models, modes), and the request that picks one. */
export interface SessionOffer {
  ids: string[];
  current: string | null;
  /** The request that selects `id` in `sessionId`. */
  select(sessionId: string, id: string): { method: string; params: Obj };
}

const strings = (values: unknown[]): string[] => values.filter((v): v is string => typeof v === "string");
const current = (value: unknown): string | null => (typeof value === "string" ? value : null);

/** A select config option's values; its options may be grouped (`{group, options: [...]}`). */
function selectValues(options: unknown): string[] {
  if (!Array.isArray(options)) return [];
  return options
    .filter(isObj)
    .flatMap((o) => (Array.isArray(o.options) ? selectValues(o.options) : strings([o.value])));
}

/**
 * The models a `session/new` answer offers: a config option of category `model` (selected with
 * session/set_config_option), else `models.availableModels` (session/set_model, which ACP has
 * as unstable and the SDK does not name). Null when it lists none: the model cannot be checked.
 */
export function modelOffer(opened: Obj): SessionOffer | null {
  const option = Array.isArray(opened.configOptions)
    ? opened.configOptions.filter(isObj).find((o) => o.category === "model" && typeof o.id === "string")
    : undefined;
  if (option) {
    const ids = selectValues(option.options);
    if (ids.length > 0)
      return {
        ids,
        current: current(option.currentValue),
        select: (sessionId, value) => ({
          method: "session/set_config_option",
          params: { sessionId, configId: option.id, value },
        }),
      };
  }
  const models = isObj(opened.models) ? opened.models : {};
  const ids = Array.isArray(models.availableModels)
    ? strings(models.availableModels.filter(isObj).map((m) => m.modelId))
    : [];
  if (ids.length === 0) return null;
  return {
    ids,
    current: current(models.currentModelId),
    select: (sessionId, modelId) => ({ method: "session/set_model", params: { sessionId, modelId } }),
  };
}

/** The modes a `session/new` answer offers (`modes.availableModes`), selected with session/set_mode. */
export function modeOffer(opened: Obj): SessionOffer | null {
  const modes = isObj(opened.modes) ? opened.modes : {};
  const ids = Array.isArray(modes.availableModes) ? strings(modes.availableModes.filter(isObj).map((m) => m.id)) : [];
  if (ids.length === 0) return null;
  return {
    ids,
    current: current(modes.currentModeId),
    select: (sessionId, modeId) => ({ method: "session/set_mode", params: { sessionId, modeId } }),
  };
}
