/** The small table the storage specs write to: an i64 key and an optional string. */
export const KV_TOML = `namespace = "t"
table = "kv"
primary_key = ["k"]
[[columns]]
name = "k"
ty = "i64"
[[columns]]
name = "v"
ty = "str"
`;
