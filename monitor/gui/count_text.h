// Counts as the window says them: "1 block", "12,345 blocks" (the locale's digit grouping),
// never "1 blocks". The window has no translations, so Qt's "%n block(s)" would stay that.
#pragma once

#include <QLocale>
#include <QString>
#include <cstdint>

namespace memtap::gui {

// `n` and the noun: `one` when n is 1, `many` otherwise.
inline QString count_text(uint64_t n, const char* one, const char* many) {
  return QStringLiteral("%1 %2").arg(QLocale().toString(qulonglong(n)),
                                     QString::fromLatin1(n == 1 ? one : many));
}

}  // namespace memtap::gui
