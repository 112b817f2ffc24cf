import type { Token } from "./ts-tokens.js";

const OPENERS: Record<string, string> = { "(": ")", "[": "]", "{": "}" };

/**
 * The tokens of `const NAME …;` after its name: the annotation and the initializer, to the
 * statement's end. Undefined when the module declares no such constant, which the registry
 * reports as a missing source.
 */
export function constantDeclaration(tokens: readonly Token[], name: string): Token[] | undefined {
  for (let i = 0; i + 1 < tokens.length; i++) {
    if (tokens[i]!.text !== "const" || tokens[i + 1]!.text !== name || tokens[i + 1]!.kind !== "word") continue;
    const stack: string[] = [];
    for (let j = i + 2; j < tokens.length; j++) {
      const t = tokens[j]!;
      if (t.kind === "punct" && OPENERS[t.text]) stack.push(OPENERS[t.text]!);
      else if (t.kind === "punct" && t.text === stack[stack.length - 1]) stack.pop();
      else if (t.kind === "punct" && t.text === ";" && stack.length === 0) return tokens.slice(i + 2, j);
    }
    return tokens.slice(i + 2);
  }
  return undefined;
}

/**
 * Type declarations with their names replaced by their order of declaration: the generated
 * types take their names from schema titles, and a title is an annotation, so renaming a type
 * is not a contract change. Property names and literal types are kept: they are the contract.
 */
export function typeShapes(tokens: readonly Token[]): Token[] {
  const names = new Map<string, string>();
  for (let i = 0; i + 2 < tokens.length; i++) {
    const [keyword, name, after] = [tokens[i]!, tokens[i + 1]!, tokens[i + 2]!];
    if (keyword.kind !== "word" || (keyword.text !== "type" && keyword.text !== "interface") || name.kind !== "word")
      continue;
    if (after.text === "=" || after.text === "{" || after.text === "<" || after.text === "extends") {
      if (!names.has(name.text)) names.set(name.text, `$${names.size}`);
    }
  }
  // A property whose name equals a type's is renamed too, consistently, which keeps the shape.
  return tokens.map((t) => (t.kind === "word" && names.has(t.text) ? { kind: "word", text: names.get(t.text)! } : t));
}
