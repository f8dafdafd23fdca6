package anthropic_test

import (
	"testing"

	"github.com/weftlabs/weft/internal/providertest"
)

// The failures every provider must tell (internal/providertest says each).

func TestInvalidSuccessBody(t *testing.T) {
	providertest.InvalidSuccessBody(t, providertest.Anthropic())
}
func TestStreamStalls(t *testing.T)     { providertest.StreamStalls(t, providertest.Anthropic()) }
func TestFirstByteBound(t *testing.T)   { providertest.FirstByteBound(t, providertest.Anthropic()) }
func TestNothingListening(t *testing.T) { providertest.NothingListening(t, providertest.Anthropic()) }
func TestEndlessBody(t *testing.T)      { providertest.EndlessBody(t, providertest.Anthropic()) }
func TestStreamCutShort(t *testing.T)   { providertest.StreamCutShort(t, providertest.Anthropic()) }
func TestStreamIdleIgnoresSlowConsumer(t *testing.T) {
	providertest.StreamIdleIgnoresSlowConsumer(t, providertest.Anthropic())
}
func TestStreamStoppedEarly(t *testing.T) {
	providertest.StreamStoppedEarly(t, providertest.Anthropic())
}

func FuzzGenerateBody(f *testing.F) { providertest.FuzzGenerateBody(f, providertest.Anthropic()) }
func FuzzStreamBody(f *testing.F)   { providertest.FuzzStreamBody(f, providertest.Anthropic()) }
