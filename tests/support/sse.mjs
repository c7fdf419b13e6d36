// Server-sent events from a fetch() response body: yields each event's `data:` payload as a
// string (`[DONE]` included), skips comments (keep-alives), and throws on anything else.
export async function* sseData(body) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (event.startsWith(':')) continue;
      if (!event.startsWith('data: ')) throw new Error(`not an SSE data event: ${event}`);
      yield event.slice(6);
    }
  }
}
