// OrderedDict: what libtorch returns from named_parameters(), named_children(), ...: items in
// insertion order, found by key, iterated as `for (auto& item : dict) item.key(), item.value()`.
#pragma once
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/error.h"

namespace kiln {

template <typename Key, typename Value>
class OrderedDict {
 public:
  class Item {
   public:
    Item(Key key, Value value) : pair_(std::move(key), std::move(value)) {}
    const Key& key() const noexcept { return pair_.first; }
    Value& value() noexcept { return pair_.second; }
    const Value& value() const noexcept { return pair_.second; }
    Value& operator*() noexcept { return value(); }
    const Value& operator*() const noexcept { return value(); }
    Value* operator->() noexcept { return &value(); }
    const Value* operator->() const noexcept { return &value(); }
    const std::pair<Key, Value>& pair() const noexcept { return pair_; }

   private:
    std::pair<Key, Value> pair_;
  };
  using Iterator = typename std::vector<Item>::iterator;
  using ConstIterator = typename std::vector<Item>::const_iterator;

  // `key_description` names what the keys are in errors ("Parameter 'w' already defined").
  explicit OrderedDict(std::string key_description = "Key") : key_description_(std::move(key_description)) {}

  Value& insert(Key key, Value value) {
    KILN_CHECK(index_.count(key) == 0, key_description_, " '", key, "' already defined");
    index_.emplace(key, items_.size());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().value();
  }
  // Inserts, or replaces the value of an existing key in place (keeping its position).
  Value& insert_or_assign(Key key, Value value) {
    if (Value* v = find(key)) return *v = std::move(value);
    return insert(std::move(key), std::move(value));
  }
  void update(const OrderedDict& other) {
    for (const auto& item : other) insert_or_assign(item.key(), item.value());
  }
  void erase(const Key& key) {
    auto it = index_.find(key);
    KILN_CHECK(it != index_.end(), key_description_, " '", key, "' is not defined");
    items_.erase(items_.begin() + it->second);
    rebuild_index();
  }

  Value* find(const Key& key) noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  const Value* find(const Key& key) const noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  bool contains(const Key& key) const noexcept { return index_.count(key) != 0; }
  Value& operator[](const Key& key) {
    Value* v = find(key);
    KILN_CHECK(v, key_description_, " '", key, "' is not defined");
    return *v;
  }
  const Value& operator[](const Key& key) const {
    const Value* v = find(key);
    KILN_CHECK(v, key_description_, " '", key, "' is not defined");
    return *v;
  }
  Item& operator[](size_t index) {
    KILN_CHECK(index < items_.size(), "Index ", index, " is out of bounds (size ", items_.size(), ")");
    return items_[index];
  }
  const Item& operator[](size_t index) const {
    KILN_CHECK(index < items_.size(), "Index ", index, " is out of bounds (size ", items_.size(), ")");
    return items_[index];
  }
  Item& front() { return (*this)[size_t(0)]; }
  Item& back() { return (*this)[items_.size() - 1]; }

  Iterator begin() { return items_.begin(); }
  Iterator end() { return items_.end(); }
  ConstIterator begin() const { return items_.begin(); }
  ConstIterator end() const { return items_.end(); }
  size_t size() const noexcept { return items_.size(); }
  bool is_empty() const noexcept { return items_.empty(); }
  void clear() {
    items_.clear();
    index_.clear();
  }
  void reserve(size_t n) { items_.reserve(n); }
  const std::string& key_description() const noexcept { return key_description_; }

  std::vector<Key> keys() const {
    std::vector<Key> out;
    for (const auto& item : items_) out.push_back(item.key());
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    for (const auto& item : items_) out.push_back(item.value());
    return out;
  }
  const std::vector<Item>& items() const noexcept { return items_; }
  std::vector<std::pair<Key, Value>> pairs() const {
    std::vector<std::pair<Key, Value>> out;
    for (const auto& item : items_) out.push_back(item.pair());
    return out;
  }

 private:
  void rebuild_index() {
    index_.clear();
    for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].key(), i);
  }
  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
  std::string key_description_;
};

}  // namespace kiln
