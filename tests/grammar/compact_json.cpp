#include "compact_json.h"

namespace kipp::grammar::lexical {

namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Result<LexicalJson> document() {
    KIPP_ASSIGN(LexicalJson value, this->value());
    skip_space();
    if (at_ != text_.size()) return fail("unexpected text at offset ", at_);
    return value;
  }

 private:
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool take_word(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  Result<LexicalJson> value() {
    skip_space();
    if (at_ >= text_.size()) return fail("unexpected end of text");
    LexicalJson out;
    const char c = text_[at_];
    if (c == '{') {
      ++at_;
      out.kind = LexicalJson::Kind::object;
      if (take('}')) return out;
      do {
        skip_space();
        KIPP_ASSIGN(std::string key, string());
        if (!take(':')) return fail("expected ':' at offset ", at_);
        KIPP_ASSIGN(LexicalJson member, value());
        out.members.push_back({std::move(key), std::move(member)});
      } while (take(','));
      if (!take('}')) return fail("expected '}' at offset ", at_);
      return out;
    }
    if (c == '[') {
      ++at_;
      out.kind = LexicalJson::Kind::array;
      if (take(']')) return out;
      do {
        KIPP_ASSIGN(LexicalJson item, value());
        out.items.push_back(std::move(item));
      } while (take(','));
      if (!take(']')) return fail("expected ']' at offset ", at_);
      return out;
    }
    if (c == '"') {
      out.kind = LexicalJson::Kind::string;
      KIPP_ASSIGN(out.text, string());
      return out;
    }
    for (std::string_view word : {"true", "false", "null"})
      if (take_word(word)) {
        out.kind = word == "null" ? LexicalJson::Kind::null : LexicalJson::Kind::boolean;
        out.text = std::string(word);
        return out;
      }
    return number();
  }

  Result<LexicalJson> number() {
    const size_t start = at_;
    const auto digits = [&] {
      const size_t from = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      return at_ - from;
    };
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    const size_t int_start = at_;
    const size_t int_digits = digits();
    if (int_digits == 0 || (int_digits > 1 && text_[int_start] == '0')) return fail("bad number at offset ", start);
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      if (digits() == 0) return fail("bad fraction at offset ", start);
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      if (digits() == 0) return fail("bad exponent at offset ", start);
    }
    LexicalJson out;
    out.kind = LexicalJson::Kind::number;
    out.text = std::string(text_.substr(start, at_ - start));
    return out;
  }

  Result<uint32_t> hex4() {
    if (at_ + 4 > text_.size()) return fail("short \\u escape at offset ", at_);
    uint32_t value = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = text_[at_++];
      value <<= 4;
      if (h >= '0' && h <= '9') value |= uint32_t(h - '0');
      else if (h >= 'a' && h <= 'f') value |= uint32_t(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') value |= uint32_t(h - 'A' + 10);
      else return fail("bad \\u escape at offset ", at_);
    }
    return value;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  Result<std::string> string() {
    if (at_ >= text_.size() || text_[at_] != '"') return fail("expected a string at offset ", at_);
    ++at_;
    std::string out;
    while (at_ < text_.size() && text_[at_] != '"') {
      const char c = text_[at_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) break;
      const char e = text_[at_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          KIPP_ASSIGN(uint32_t cp, hex4());
          if (cp >= 0xD800 && cp <= 0xDBFF && text_.substr(at_, 2) == "\\u") {
            at_ += 2;
            KIPP_ASSIGN(const uint32_t low, hex4());
            if (low < 0xDC00 || low > 0xDFFF) return fail("unpaired surrogate at offset ", at_);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            return fail("unpaired surrogate at offset ", at_);
          }
          append_utf8(out, cp);
          break;
        }
        default: return fail("bad escape at offset ", at_);
      }
    }
    if (at_ >= text_.size()) return fail("unterminated string");
    ++at_;
    return out;
  }

  std::string_view text_;
  size_t at_ = 0;
};

void write_string(std::string& out, const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (uint8_t(c) < 0x20) {
          out += "\\u00";
          out += kHex[uint8_t(c) >> 4];
          out += kHex[uint8_t(c) & 15];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void write(std::string& out, const LexicalJson& value) {
  switch (value.kind) {
    case LexicalJson::Kind::null:
    case LexicalJson::Kind::boolean:
    case LexicalJson::Kind::number: out += value.text; break;
    case LexicalJson::Kind::string: write_string(out, value.text); break;
    case LexicalJson::Kind::array:
      out += '[';
      for (size_t i = 0; i < value.items.size(); ++i) {
        if (i > 0) out += ',';
        write(out, value.items[i]);
      }
      out += ']';
      break;
    case LexicalJson::Kind::object:
      out += '{';
      for (size_t i = 0; i < value.members.size(); ++i) {
        if (i > 0) out += ',';
        write_string(out, value.members[i].key);
        out += ':';
        write(out, value.members[i].value);
      }
      out += '}';
      break;
  }
}

}  // namespace

const LexicalJson* LexicalJson::member(std::string_view key) const {
  for (const auto& [name, value] : members)
    if (name == key) return &value;
  return nullptr;
}

Result<LexicalJson> parse_lexical_json(std::string_view text) { return Reader(text).document(); }

std::string compact_json(const LexicalJson& value) {
  std::string out;
  write(out, value);
  return out;
}

}  // namespace kipp::grammar::lexical
