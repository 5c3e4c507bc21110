// See command_line.h.
#include "monitor/cli/command_line.h"

#include <cstdio>
#include <cstdlib>

#include "monitor/model/mem_event.h"
#include "monitor/store/reader/text_values.h"

namespace memtap {

namespace {

constexpr size_t kHelpWidth = 80;
constexpr size_t kOptionColumn = 32;

// `text` broken at spaces into lines of at most `width` characters; its own newlines kept.
std::string wrap(const std::string& text, size_t width) {
  std::string out, line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(" \n", start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    if (end < text.size() && text[end] == '\n') {
      out += line + "\n";
      line.clear();
    }
    start = end + 1;
  }
  return out + line;
}

// CLI11's help, with memtap's shape: the synopsis and what the command does first, the options'
// descriptions wrapped beside them.
class CommandHelp : public CLI::Formatter {
 public:
  CommandHelp(std::string usage, std::string about)
      : usage_(std::move(usage)), about_(std::move(about)) {
    column_width(kOptionColumn);
    label("OPTIONS", "[options]");
  }
  std::string make_usage(const CLI::App*, std::string) const override {
    return "usage: " + usage_ + "\n\n" + wrap(about_, kHelpWidth) + "\n";
  }
  std::string make_description(const CLI::App*) const override { return ""; }
  // A positional is named by its name alone (CLI11 adds " ..." where it takes several).
  std::string make_option_opts(const CLI::Option* opt) const override {
    return opt->get_positional() ? "" : CLI::Formatter::make_option_opts(opt);
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap(opt->get_description(), kHelpWidth - kOptionColumn);
  }

 private:
  std::string usage_;
  std::string about_;
};

// CLI11's message for a mistake it found, as memtap says it.
std::string mistake(const CLI::ParseError& e) {
  const std::string what = e.what();
  const size_t colon = what.find(": ");
  const std::string option = colon == std::string::npos ? "" : what.substr(0, colon);
  if (e.get_name() == "ArgumentMismatch" && !option.empty()) {
    if (what.find("At Most") != std::string::npos) return option + " given twice";
    return option + " needs a value";
  }
  return what;
}

}  // namespace

void describe_command(CLI::App* app, const std::string& command, const std::string& usage,
                      const std::string& about) {
  app->name("memtap " + command);
  app->formatter(std::make_shared<CommandHelp>(usage, about));
  app->set_help_flag("-h,--help", "print this help and exit");
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app->allow_extras();
}

int usage_error(const std::string& command, const std::string& message) {
  fprintf(stderr, "memtap %s: %s\nsee memtap %s --help\n", command.c_str(), message.c_str(),
          command.c_str());
  return 2;
}

bool parse_count(const std::string& text, size_t* out) {
  char* end = nullptr;
  const unsigned long long v = strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != 0 || v == 0) return false;
  *out = size_t(v);
  return true;
}

bool parse_device_option(const std::string& text, int32_t* device) {
  int32_t parsed = kNoDevice;
  if (!reader::parse_device(text, &parsed) || parsed == kNoDevice) return false;
  *device = parsed;
  return true;
}

int parse_command_line(CLI::App* app, const std::vector<std::string>& args,
                       std::vector<std::string>* rest) {
  const std::string command = app->get_name().substr(sizeof("memtap ") - 1);
  if (rest != nullptr) app->prefix_command();
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    fputs(app->help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    return usage_error(command, mistake(e));
  }
  std::vector<std::string> unclaimed = app->remaining();
  if (rest != nullptr && !unclaimed.empty() && unclaimed[0] == "--") {
    rest->assign(unclaimed.begin() + 1, unclaimed.end());
    return -1;
  }
  if (!unclaimed.empty()) {
    const std::string& a = unclaimed[0];
    if (a.size() > 1 && a[0] == '-') return usage_error(command, "unknown option '" + a + "'");
    if (rest == nullptr) return usage_error(command, "unexpected argument '" + a + "'");
  }
  if (rest != nullptr) *rest = unclaimed;
  return -1;
}

CLI::Option* add_checked_option(CLI::App* app, const std::string& name,
                                const std::string& value_name, TakeValueFn take,
                                const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name,
          [take = std::move(take)](const std::string& value) {
            std::string error;
            if (!take(value, &error)) throw CLI::ValidationError(error);
          },
          help)
      ->type_name(value_name);
}

}  // namespace memtap
